// The JSON API of the page server. Every request carries the page's session in the
// X-Noon-Session header, never in a cookie: browsers send a cookie to every port of its host,
// while this origin's storage (scheme, host and port) is readable by this origin's scripts
// only. The header is also why no other origin can make a request in the page's name: it
// cannot send a custom header without a preflight the server never grants.

const SESSION = "noon-session";

export class ApiError extends Error {
  constructor(status, message, current) {
    super(message);
    this.status = status;
    this.current = current;
  }
}

let namespace = localStorage.getItem("noon-ns") || "";

export function ns() {
  return namespace;
}

export function setNs(value) {
  namespace = value;
  localStorage.setItem("noon-ns", value);
}

function headers(extra = {}) {
  const session = localStorage.getItem(SESSION);
  return session ? { ...extra, "X-Noon-Session": session } : extra;
}

/** Trade the token for this server's session, kept in this origin's storage. */
export async function login(token) {
  const answer = await post("/api/login", { token });
  localStorage.setItem(SESSION, answer.session);
}

export function loggedIn() {
  return Boolean(localStorage.getItem(SESSION));
}

async function answer(response) {
  let body = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  if (response.status === 401 && localStorage.getItem(SESSION)) {
    // The server restarted (a new session each start): log in again.
    localStorage.removeItem(SESSION);
    window.dispatchEvent(new Event("noon-logged-out"));
  }
  if (!response.ok) {
    throw new ApiError(
      response.status,
      (body && body.error) || response.statusText,
      body && body.current,
    );
  }
  return body;
}

export async function get(path, params = {}) {
  const query = new URLSearchParams();
  if (namespace) query.set("ns", namespace);
  for (const [key, value] of Object.entries(params)) {
    if (value === undefined || value === null || value === "") continue;
    if (Array.isArray(value)) value.forEach((v) => query.append(key, v));
    else query.set(key, value);
  }
  return answer(await fetch(`${path}?${query}`, { credentials: "omit", headers: headers() }));
}

export async function post(path, body = {}) {
  const payload = namespace ? { ns: namespace, ...body } : body;
  return answer(
    await fetch(path, {
      method: "POST",
      credentials: "omit",
      headers: headers({ "Content-Type": "application/json" }),
      body: JSON.stringify(payload),
    }),
  );
}

/** The server-sent events of `GET /api/events`, read with fetch (EventSource cannot send a
 * header): calls `onEvent` with each message's data and `onState` with true once connected
 * and false when the stream broke; reconnects after 2 s, until logged out. */
export async function events(onEvent, onState) {
  for (;;) {
    try {
      const response = await fetch("/api/events", {
        credentials: "omit",
        headers: headers(),
        cache: "no-store",
      });
      if (!response.ok) {
        await answer(response);
        return;
      }
      onState(true);
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const lines = buffer.slice(0, end).split("\n");
          buffer = buffer.slice(end + 2);
          if (lines.some((line) => line.startsWith("event:"))) continue; // only plain messages
          const data = lines
            .filter((line) => line.startsWith("data: "))
            .map((line) => line.slice(6));
          if (data.length) onEvent(JSON.parse(data.join("\n")));
        }
      }
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return;
    }
    onState(false);
    await new Promise((resolve) => {
      setTimeout(resolve, 2000);
    });
  }
}
