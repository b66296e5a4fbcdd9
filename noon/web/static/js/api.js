// The JSON API of the page server. Every state-changing request carries the CSRF token the
// server put in the page.

const csrf = document.querySelector('meta[name="noon-csrf"]').content;

export class ApiError extends Error {
  constructor(status, message, current) {
    super(message);
    this.status = status;
    this.current = current;
  }
}

let namespace = localStorage.getItem("noon-ns") || "";

export function ns() { return namespace; }

export function setNs(value) {
  namespace = value;
  localStorage.setItem("noon-ns", value);
}

async function answer(response) {
  let body = null;
  try { body = await response.json(); } catch { body = null; }
  if (!response.ok) {
    throw new ApiError(response.status, (body && body.error) || response.statusText, body && body.current);
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
  return answer(await fetch(`${path}?${query}`, { credentials: "same-origin" }));
}

export async function post(path, body = {}) {
  const payload = namespace ? { ns: namespace, ...body } : body;
  return answer(await fetch(path, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-Noon-CSRF": csrf },
    body: JSON.stringify(payload),
  }));
}
