import { useEffect, useState } from 'preact/hooks';
import { answer, api, messageOf } from '../api/client.ts';
import type { paths } from '../api/schema';
import { Failure } from '../components/failure.tsx';
import { Field } from '../components/field.tsx';
import { useLoad } from '../components/use-load.ts';
import { showTime } from '../format.ts';

type Created = paths['/api/v3/key_pairs']['post']['responses'][200]['content']['application/json']['key_pair'];

/**
 * Key pairs of devices. A new pair's secret key is answered once by the API: it is kept only in this
 * page's state, shown with the settings a device needs, and gone when the user navigates away.
 */
export function KeyPairsPage() {
  const list = useLoad(
    () =>
      answer(api.GET('/api/v3/key_pairs', { params: { query: { per: 1000, order_by: 'created_at', order: 'desc' } } })),
    [],
  );
  const [open, setOpen] = useState(false);
  const [name, setName] = useState('');
  const [error, setError] = useState<string | undefined>();
  const [created, setCreated] = useState<Created | undefined>();
  const create = async (event: Event) => {
    event.preventDefault();
    try {
      const answered = await answer(api.POST('/api/v3/key_pairs', { body: { key_pair: { name } } }));
      setCreated(answered.key_pair);
      setError(undefined);
      setOpen(false);
      setName('');
      list.reload();
    } catch (failure) {
      setError(messageOf(failure));
    }
  };
  return (
    <section>
      <h1>Key pairs</h1>
      {created && <NewSecret pair={created} onDone={() => setCreated(undefined)} />}
      {!open && (
        <button type="button" onClick={() => setOpen(true)}>
          New key pair
        </button>
      )}
      {open && (
        <form onSubmit={create} aria-label="New key pair" class="panel">
          <Field label="Name" error={error}>
            {(id, describedBy) => (
              <input
                id={id}
                aria-describedby={describedBy}
                required
                value={name}
                onInput={(e) => setName(e.currentTarget.value)}
              />
            )}
          </Field>
          <button type="submit">Create</button>
        </form>
      )}
      <Failure message={list.error} />
      {list.data && (
        <table aria-label="Key pairs">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Access key</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {list.data.key_pairs.map((pair) => (
              <tr key={pair.key_pair_key}>
                <td>{pair.name}</td>
                <td>
                  <code>{pair.access_key}</code>
                </td>
                <td>{showTime(pair.created_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** Lowercase hex HMAC-SHA256 of `text` under `key`: the MQTT password of a key pair (docs/devices.md). */
async function hmacHex(key: string, text: string): Promise<string | undefined> {
  if (!globalThis.crypto?.subtle) return undefined;
  const encoder = new TextEncoder();
  const secret = await crypto.subtle.importKey('raw', encoder.encode(key), { name: 'HMAC', hash: 'SHA-256' }, false, [
    'sign',
  ]);
  const signature = new Uint8Array(await crypto.subtle.sign('HMAC', secret, encoder.encode(text)));
  return Array.from(signature, (b) => b.toString(16).padStart(2, '0')).join('');
}

function NewSecret({ pair, onDone }: { pair: Created; onDone: () => void }) {
  const secret = pair.secret_key ?? '';
  const [password, setPassword] = useState<string | undefined>();
  useEffect(() => {
    hmacHex(secret, pair.access_key).then(setPassword, () => setPassword(undefined));
  }, [secret, pair.access_key]);
  const host = location.hostname;
  const port = location.port || (location.protocol === 'https:' ? '443' : '80');
  const http = [
    `protocol = ${location.protocol.replace(':', '')}`,
    `host = ${host}`,
    `port = ${port}`,
    `access_key = ${pair.access_key}`,
    `secret_key = ${secret}`,
  ].join('\n');
  const mqtt = [
    'protocol = mqtt',
    `host = ${host}`,
    'port = 1883',
    `access_key = ${pair.access_key}`,
    `secret_key = ${secret}`,
    `username = ${pair.access_key}`,
    `password = ${password ?? '<hex HMAC-SHA256 of the access key under the secret key>'}`,
  ].join('\n');
  return (
    <section class="panel" aria-label="New key pair secret">
      <h2>Key pair {pair.name} created</h2>
      <p>
        <strong>Copy the secret key now: it is shown only this once.</strong> Devices sign with it; the server keeps it
        sealed and will not show it again.
      </p>
      <Copyable label="Secret key" text={secret} />
      <Copyable label="Device settings for HTTP" text={http} />
      <Copyable label="Device settings for MQTT" text={mqtt} hint="port: the server's MQTT_PORT (1883 unless set)" />
      <button type="button" onClick={onDone}>
        Done
      </button>
    </section>
  );
}

function Copyable(props: { label: string; text: string; hint?: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    await navigator.clipboard.writeText(props.text).catch(() => undefined);
    setCopied(true);
  };
  return (
    <figure>
      <figcaption>
        {props.label}
        {props.hint ? <small> ({props.hint})</small> : null}
      </figcaption>
      <pre>{props.text}</pre>
      <button type="button" onClick={copy}>
        {copied ? 'Copied' : `Copy ${props.label.charAt(0).toLowerCase()}${props.label.slice(1)}`}
      </button>
    </figure>
  );
}
