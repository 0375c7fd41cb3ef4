/**
 * @module Light and dark themes: the system's choice (`prefers-color-scheme`) until the person picks
 * one with the toggle, which is kept in localStorage.
 */

/** A theme the page shows. */
export type Theme = 'light' | 'dark';

const KEY = 'toolbus-console-theme';

/** The theme picked with the toggle, if any. */
export function storedTheme(): Theme | undefined {
  try {
    const value = localStorage.getItem(KEY);
    return value === 'light' || value === 'dark' ? value : undefined;
  } catch {
    return undefined;
  }
}

/** The theme shown now: the picked one, else the system's. */
export function currentTheme(): Theme {
  return storedTheme() ?? (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light');
}

/**
 * Shows `theme` (undefined: follow the system) and keeps the choice. The page always carries the theme
 * it shows as `data-theme`, so the stylesheet has one set of dark colours.
 */
export function applyTheme(theme: Theme | undefined): void {
  document.documentElement.dataset.theme =
    theme ?? (matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light');
  try {
    if (theme) localStorage.setItem(KEY, theme);
    else localStorage.removeItem(KEY);
  } catch {
    // Storage may be off (private windows): the toggle still works for this page.
  }
}

/** Shows the stored theme, or the system's, and follows the system's changes while none is picked. */
export function startTheme(): void {
  applyTheme(storedTheme());
  matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => {
    if (storedTheme() === undefined) applyTheme(undefined);
  });
}
