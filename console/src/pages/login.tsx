/**
 * @module The login page: the gateway's token, checked with one API call before it is kept.
 */
import { useState } from 'preact/hooks';
import { createApi, errorText } from '../api.js';
import { useTitle } from '../hooks.js';

/** Props of {@link LoginPage}. */
export interface LoginPageProps {
  onLogin(token: string): void;
  /** Why the session ended, shown above the form. */
  notice: string | undefined;
}

/** Asks for the token and keeps it once the gateway accepts it. */
export function LoginPage({ onLogin, notice }: LoginPageProps) {
  useTitle('Log in');
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event): Promise<void> => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    const value = token.trim();
    // A throwaway client: a refusal here is shown on this page, not treated as a session ending.
    const probe = createApi({ token: value, onUnauthorized: () => undefined });
    try {
      await probe.json('/api/v1/tools');
      onLogin(value);
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="login" aria-labelledby="page-title">
      <h1 id="page-title">Log in to toolbus</h1>
      {notice && (
        <p class="notice info" role="status">
          {notice}
        </p>
      )}
      <form onSubmit={submit} class="card stack">
        <div class="field">
          <label for="token">Gateway token</label>
          <input
            id="token"
            name="token"
            type="password"
            autocomplete="off"
            spellcheck={false}
            value={token}
            aria-describedby="token-hint"
            aria-invalid={error ? true : undefined}
            onInput={(e) => setToken(e.currentTarget.value)}
          />
          <p id="token-hint" class="hint">
            The token <code>toolbus up</code> prints on its <code>token</code> line:{' '}
            <code>TOOLBUS_TOKEN</code>, or the file <code>.toolbus/token</code> in the folder where it runs.
            It is kept in this tab only, until you log out or close it.
          </p>
        </div>
        {error && (
          <p class="notice error" role="alert">
            {error}
          </p>
        )}
        <div>
          <button type="submit" class="button primary" disabled={busy}>
            {busy ? 'Checking…' : 'Log in'}
          </button>
        </div>
      </form>
    </section>
  );
}
