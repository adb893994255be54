import { useEffect, useMemo, useState } from 'preact/hooks';
import { answer, api } from '../api/client.ts';
import type { paths } from '../api/schema';
import { useAllows } from '../caller.ts';
import { ConfirmButton } from '../components/confirm.tsx';
import { Copyable } from '../components/copyable.tsx';
import { EmptyState } from '../components/empty-state.tsx';
import { Failure } from '../components/failure.tsx';
import { Field, TextField } from '../components/field.tsx';
import { answerByField, useFieldAction } from '../components/field-errors.ts';
import { FormActions } from '../components/form-actions.tsx';
import { useLoad } from '../components/use-load.ts';
import { hmacHex } from '../device-signing.ts';
import { showTime } from '../format.ts';
import { RoleSelect } from '../roles/role-select.tsx';
import { useRoles } from '../roles/use-roles.ts';
import { Link } from '../router.tsx';

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
  const mayDelete = useAllows('key_pair', 'delete');
  const mayConnect = useAllows('key_pair', 'create');
  const mayReadRoles = useAllows('role', 'read');
  const roles = useRoles(mayReadRoles);
  const roleName = new Map(roles.data?.map((r) => [r.role_key, r.name]));
  const [open, setOpen] = useState(false);
  const [name, setName] = useState('');
  // '' leaves the role to the server: the organisation's Agent role, made for devices.
  const [role, setRole] = useState('');
  const action = useFieldAction(['key_pair.name', 'key_pair.role_key']);
  const [created, setCreated] = useState<Created | undefined>();
  // Leaving the console for another page may keep this one whole in the browser's back/forward cache,
  // to be shown again by Back: the secret is forgotten as the page is hidden (docs/console.md, Key pairs).
  useEffect(() => {
    const forget = () => setCreated(undefined);
    addEventListener('pagehide', forget);
    return () => removeEventListener('pagehide', forget);
  }, []);
  const create = async (event: Event) => {
    event.preventDefault();
    const done = await action.run(async () => {
      const answered = await answerByField(
        api.POST('/api/v3/key_pairs', { body: { key_pair: { name, ...(role ? { role_key: role } : {}) } } }),
      );
      setCreated(answered.key_pair);
    });
    if (!done) return;
    setOpen(false);
    setName('');
    setRole('');
    list.reload();
  };
  return (
    <section>
      <h1>Key pairs</h1>
      {created && <NewSecret pair={created} onDone={() => setCreated(undefined)} />}
      {!open && (
        <div class="actions">
          <button type="button" onClick={() => setOpen(true)}>
            New key pair
          </button>
          {mayConnect && Boolean(list.data?.key_pairs.length) && <Link to="connect">Connect a device</Link>}
        </div>
      )}
      {open && (
        <form onSubmit={create} aria-label="New key pair" class="panel">
          <TextField label="Name" required value={name} onInput={setName} error={action.of('key_pair.name')} />
          {mayReadRoles && (
            <Field label="Role" hint="What devices signing with it may do" error={action.of('key_pair.role_key')}>
              {(id, describedBy, invalid) => (
                <RoleSelect
                  id={id}
                  describedBy={describedBy}
                  invalid={invalid}
                  roles={(roles.data ?? []).filter((r) => r.name !== 'Agent')}
                  value={role}
                  onChange={setRole}
                  first={<option value="">Agent (for devices)</option>}
                />
              )}
            </Field>
          )}
          <FormActions action={action} submit="Create" />
        </form>
      )}
      <Failure message={list.error} />
      {list.data?.key_pairs.length === 0 && (
        <EmptyState title="No key pairs yet" action={<Link to="connect">Connect a device</Link>}>
          A device signs what it sends with a key pair. Make one with New key pair, or let Connect a device make one and
          show the commands that send a first event.
        </EmptyState>
      )}
      {list.data && list.data.key_pairs.length > 0 && (
        <table aria-label="Key pairs" class="cards">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Access key</th>
              {mayReadRoles && <th scope="col">Role</th>}
              <th scope="col">Created</th>
              {mayDelete && <th scope="col">Actions</th>}
            </tr>
          </thead>
          <tbody>
            {list.data.key_pairs.map((pair) => (
              <tr key={pair.key_pair_key}>
                <td>{pair.name}</td>
                <td data-label="Access key">
                  <code>{pair.access_key}</code>
                </td>
                {mayReadRoles && <td data-label="Role">{roleName.get(pair.role_key) ?? pair.role_key}</td>}
                <td data-label="Created">{showTime(pair.created_at)}</td>
                {mayDelete && (
                  <td>
                    <ConfirmButton
                      label="Delete"
                      about={pair.name}
                      title={`Delete the key pair ${pair.name}?`}
                      question={
                        <p>
                          Devices that sign with <code>{pair.access_key}</code> are refused from then on, and those
                          connected over MQTT are disconnected.
                        </p>
                      }
                      onConfirm={async () => {
                        await answer(
                          api.DELETE('/api/v3/key_pairs/{key_pair_key}', {
                            params: { path: { key_pair_key: pair.key_pair_key } },
                          }),
                        );
                        list.reload();
                      }}
                    />
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

type DeviceSettings =
  paths['/api/v3/device_settings']['get']['responses'][200]['content']['application/json']['device_settings'];

/** What the MQTT settings leave to the user to fill in, if anything. */
function mqttHint(settings: DeviceSettings | undefined): string | undefined {
  // The device settings could not be read (a role without key pair read).
  if (!settings) return "port: the server's MQTT_PORT (1883 unless set)";
  if (settings.external_broker)
    return 'devices connect to the MQTT broker the server uses (MQTT_URL), not to the server itself';
  if (settings.mqtt_port === null && settings.mqtts_port === null) {
    return 'the server has no MQTT port open (MQTT_PORT=0): devices use HTTP';
  }
  return undefined;
}

function NewSecret({ pair, onDone }: { pair: Created; onDone: () => void }) {
  const secret = pair.secret_key ?? '';
  const password = useMemo(() => hmacHex(secret, pair.access_key), [secret, pair.access_key]);
  const host = location.hostname;
  const port = location.port || (location.protocol === 'https:' ? '443' : '80');
  const http = [
    `protocol = ${location.protocol.replace(':', '')}`,
    `host = ${host}`,
    `port = ${port}`,
    `access_key = ${pair.access_key}`,
    `secret_key = ${secret}`,
  ].join('\n');
  // The broker's ports, as the server has them (docs/devices.md, "Device settings"); 1883 if they
  // cannot be read.
  const asked = useLoad(async () => (await answer(api.GET('/api/v3/device_settings', {}))).device_settings, []);
  const settings = asked.data;
  // Shown once the server has answered (or refused: then 1883), never with a port it may not have.
  const settled = asked.data !== undefined || asked.error !== undefined;
  const secure = settings?.mqtts_port != null;
  // A server without an MQTT port (MQTT_PORT=0) and no external broker has no port to give.
  const noMqtt = settings !== undefined && !settings.external_broker && settings.mqtt_port === null && !secure;
  const mqtt = [
    `protocol = ${secure ? 'mqtts' : 'mqtt'}`,
    `host = ${settings?.external_broker ? "<your MQTT broker's host (MQTT_URL)>" : host}`,
    `port = ${settings?.external_broker ? "<your MQTT broker's port>" : noMqtt ? '<none: the server has no MQTT port open>' : ((secure ? settings?.mqtts_port : settings?.mqtt_port) ?? 1883)}`,
    `access_key = ${pair.access_key}`,
    `secret_key = ${secret}`,
    `username = ${pair.access_key}`,
    `password = ${password}`,
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
      {settled && <Copyable label="Device settings for MQTT" text={mqtt} hint={mqttHint(settings)} />}
      <button type="button" onClick={onDone}>
        Done
      </button>
    </section>
  );
}
