// ESLint's configuration for the page's scripts (noon/web/static/js), run by
// tests/web/test_js_lint.py with the ESLint that scripts/install-eslint.sh pins. Rules and browser
// globals are written out here, so nothing but ESLint itself is installed.
const browser = [
  "window", "document", "location", "history", "navigator", "console", "fetch", "URL",
  "URLSearchParams", "EventSource", "setTimeout", "clearTimeout", "setInterval", "clearInterval",
  "requestAnimationFrame", "sessionStorage", "localStorage", "HTMLElement", "Node", "Event",
  "CustomEvent", "AbortController", "Headers", "Response", "Blob", "TextEncoder", "TextDecoder",
  "TextDecoderStream", "Intl", "confirm", "alert", "prompt", "getComputedStyle", "queueMicrotask", "structuredClone",
  "crypto", "performance", "KeyboardEvent", "MouseEvent", "DOMParser", "Element",
];

export default [
  {
    files: ["noon/web/static/js/**/*.js"],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module",
      globals: Object.fromEntries(browser.map((name) => [name, "readonly"])),
    },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      "no-undef": "error",
      "no-unused-vars": ["error", { args: "after-used", argsIgnorePattern: "^_" }],
      "no-redeclare": "error",
      "no-dupe-keys": "error",
      "no-dupe-args": "error",
      "no-duplicate-case": "error",
      "no-unreachable": "error",
      "no-const-assign": "error",
      "no-self-assign": "error",
      "no-self-compare": "error",
      "no-unsafe-finally": "error",
      "no-unsafe-negation": "error",
      "no-fallthrough": "error",
      "no-empty": ["error", { allowEmptyCatch: true }],
      "no-shadow-restricted-names": "error",
      "no-import-assign": "error",
      "no-use-before-define": ["error", { functions: false, classes: true, variables: true }],
      "no-var": "error",
      "prefer-const": "error",
      "eqeqeq": ["error", "always", { null: "ignore" }],
      "no-eval": "error",
      "no-implied-eval": "error",
      "no-new-func": "error",
      "valid-typeof": "error",
      "use-isnan": "error",
      "no-constant-condition": ["error", { checkLoops: false }],
      "no-async-promise-executor": "error",
      "require-yield": "error",
    },
  },
];
