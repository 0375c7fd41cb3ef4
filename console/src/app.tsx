/**
 * @module The app: the login page until a token is accepted, then the layout (skip link, header with
 * the navigation, the theme toggle and logout, and the page of the hash route).
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { createApi, type ApiError } from './api.js';
import { ApiContext, useRoute } from './hooks.js';
import { loadToken, saveToken } from './session.js';
import { applyTheme, currentTheme, type Theme } from './theme.js';
import { LoginPage } from './pages/login.js';
import { OverviewPage } from './pages/overview.js';
import { ServicesPage } from './pages/services.js';
import { ToolsPage } from './pages/tools.js';
import { ToolPage } from './pages/tool.js';
import { ConfigPage } from './pages/config.js';
import { CallsPage } from './pages/calls.js';
import { AgentPage } from './pages/agent.js';
import { AuditPage } from './pages/audit.js';
import { ApprovalsPage } from './pages/approvals.js';

const NAV: { path: string; label: string }[] = [
  { path: '/overview', label: 'Overview' },
  { path: '/services', label: 'Services' },
  { path: '/tools', label: 'Tools' },
  { path: '/config', label: 'Config' },
  { path: '/calls', label: 'Live calls' },
  { path: '/agent', label: 'Agent' },
  { path: '/audit', label: 'Audit' },
  { path: '/approvals', label: 'Approvals' },
];

/** The page of a route. */
function page(route: string): ComponentChildren {
  const [, first = '', ...rest] = route.split('/');
  const tail = rest.map((part) => decodeURIComponent(part));
  switch (first) {
    case 'overview':
    case '':
      return <OverviewPage />;
    case 'services':
      return <ServicesPage />;
    case 'tools':
      return tail[0] ? <ToolPage key={tail[0]} name={tail[0]} /> : <ToolsPage />;
    case 'config':
      return <ConfigPage type={tail[0]} itemKey={tail.length > 1 ? tail.slice(1).join('/') : undefined} />;
    case 'calls':
      return <CallsPage />;
    case 'agent':
      return <AgentPage />;
    case 'audit':
      return <AuditPage />;
    case 'approvals':
      return <ApprovalsPage />;
    default:
      return (
        <section aria-labelledby="page-title">
          <h1 id="page-title">Not found</h1>
          <p>
            There is no page <code>#{route}</code>. <a href="#/overview">Go to the overview</a>.
          </p>
        </section>
      );
  }
}

function ThemeToggle() {
  const [theme, setTheme] = useState<Theme>(currentTheme());
  return (
    <button
      type="button"
      class="button ghost"
      aria-pressed={theme === 'dark'}
      title={theme === 'dark' ? 'Switch to the light theme' : 'Switch to the dark theme'}
      onClick={() => {
        const next: Theme = theme === 'dark' ? 'light' : 'dark';
        applyTheme(next);
        setTheme(next);
      }}
    >
      Dark theme
    </button>
  );
}

/** The console. */
export function App() {
  const [token, setToken] = useState<string | undefined>(loadToken());
  const [ended, setEnded] = useState<string | undefined>(undefined);
  const route = useRoute();
  const main = useRef<HTMLElement>(null);

  const api = useMemo(
    () =>
      token === undefined
        ? undefined
        : createApi({
            token,
            onUnauthorized: (error: ApiError) => {
              saveToken(undefined);
              setEnded(`The gateway refused the token: ${error.message}`);
              setToken(undefined);
            },
          }),
    [token],
  );

  const login = (accepted: string): void => {
    saveToken(accepted);
    setEnded(undefined);
    setToken(accepted);
  };
  const logout = (): void => {
    saveToken(undefined);
    setEnded('You are logged out.');
    setToken(undefined);
  };
  const skip = (event: Event): void => {
    event.preventDefault();
    main.current?.focus();
  };

  const active = '/' + (route.split('/')[1] ?? '');
  // On a move to another page (not within one), focus goes to its content, as a page load would.
  const shown = useRef(active);
  useEffect(() => {
    if (shown.current === active) return;
    shown.current = active;
    main.current?.focus();
  }, [active]);
  return (
    <>
      <a class="skip-link" href="#main" onClick={skip}>
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="#/overview">
          toolbus <span>console</span>
        </a>
        {api && (
          <nav aria-label="Pages">
            <ul>
              {NAV.map((item) => (
                <li key={item.path}>
                  <a
                    href={`#${item.path}`}
                    aria-current={active === item.path ? 'page' : undefined}
                    class={active === item.path ? 'active' : undefined}
                  >
                    {item.label}
                  </a>
                </li>
              ))}
            </ul>
          </nav>
        )}
        <div class="top-actions">
          <ThemeToggle />
          {api && (
            <button type="button" class="button ghost" onClick={logout}>
              Log out
            </button>
          )}
        </div>
      </header>
      <main id="main" ref={main} tabIndex={-1}>
        {api ? (
          <ApiContext.Provider value={api}>{page(route)}</ApiContext.Provider>
        ) : (
          <LoginPage onLogin={login} notice={ended} />
        )}
      </main>
    </>
  );
}
