import { useState } from 'preact/hooks';
import { answer, api, messageOf } from '../api/client.ts';
import { useAllows } from '../caller.ts';
import { EmptyState } from '../components/empty-state.tsx';
import { Failure } from '../components/failure.tsx';
import { useLoad } from '../components/use-load.ts';
import { countOf } from '../format.ts';
import { Link } from '../router.tsx';

/**
 * What an organisation without things sees on the Overview: where to begin (`Connect a device`), or a
 * demo of simulated machines run by the server (POST /api/v3/demo), clearly labelled as simulated, and
 * `Stop the demo` while it runs (docs/console.md, "First steps").
 */
export function FirstSteps({ hasThings, onChange }: { hasThings: boolean; onChange: () => void }) {
  const demo = useLoad(async () => (await answer(api.GET('/api/v3/demo', {}))).demo, []);
  const mayStart = useAllows('thing', 'create');
  const mayConnect = useAllows('key_pair', 'create');
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  const act = async (call: () => Promise<unknown>) => {
    setBusy(true);
    try {
      await call();
      setError(undefined);
      demo.reload();
      onChange();
    } catch (failure) {
      setError(messageOf(failure));
    } finally {
      setBusy(false);
    }
  };
  const start = () => act(() => answer(api.POST('/api/v3/demo', { body: { demo: { devices: 5, rate: 1 } } })));
  const stop = () => act(() => answer(api.DELETE('/api/v3/demo', {})));
  if (demo.data?.running) {
    return (
      <div class="notice" role="status">
        <p>
          <strong>A demo is running:</strong>{' '}
          {`${countOf(demo.data.devices, 'simulated machine')} (${demo.data.thing_keys.join(', ')})`} sending made-up
          readings. They are not real devices.
        </p>
        <Failure message={error} />
        {mayStart && (
          <button type="button" class="secondary" disabled={busy} onClick={stop}>
            Stop the demo
          </button>
        )}
      </div>
    );
  }
  if (hasThings) return null;
  return (
    <>
      <EmptyState
        title="No things yet"
        action={
          <>
            {mayConnect && <Link to="connect">Connect a device</Link>}
            {mayStart && (
              <button type="button" disabled={busy} onClick={start}>
                Start a demo
              </button>
            )}
          </>
        }
      >
        A thing is a device or machine that sends readings. {nextStep(mayConnect, mayStart)}
      </EmptyState>
      <Failure message={error} />
    </>
  );
}

const DEMO = 'five simulated machines, run by the server, that send made-up readings until you stop them.';

/** What the caller may do first, in words that offer only what its role allows. */
function nextStep(mayConnect: boolean, mayStart: boolean): string {
  if (mayConnect && mayStart) return `Connect your first device, or start a demo: ${DEMO}`;
  if (mayConnect) return 'Connect your first device.';
  if (mayStart) return `Start a demo: ${DEMO}`;
  return 'They show here once someone whose role may add things connects the first.';
}
