/**
 * @module The session's token, kept in sessionStorage: gone when the tab closes.
 */
const KEY = 'toolbus-console-token';

/** The token of this tab's session, if logged in. */
export function loadToken(): string | undefined {
  try {
    return sessionStorage.getItem(KEY) ?? undefined;
  } catch {
    return undefined;
  }
}

/** Keeps the token for the session (undefined: log out). */
export function saveToken(token: string | undefined): void {
  try {
    if (token === undefined) sessionStorage.removeItem(KEY);
    else sessionStorage.setItem(KEY, token);
  } catch {
    // Storage may be off: the session then lasts as long as the page.
  }
}
