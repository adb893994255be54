import { useEffect, useState } from 'preact/hooks';
import { answer, api } from '../api/client.ts';
import { useAllows, useMayRead } from '../caller.ts';
import { Copyable } from '../components/copyable.tsx';
import { Failure } from '../components/failure.tsx';
import { TextField } from '../components/field.tsx';
import { answerByField, useFieldAction } from '../components/field-errors.ts';
import { FormActions } from '../components/form-actions.tsx';
import { useLoad } from '../components/use-load.ts';
import { showTime, showValue } from '../format.ts';
import { realtime } from '../realtime.ts';
import { currentQuery, Link, segment } from '../router.tsx';
import { curlCommands, type GuideKeys, mosquittoCommands, sdkSettings } from './commands.ts';

/**
 * `Connect a device` (docs/console.md): makes a key pair (or takes one the user has), shows commands
 * that send a first event to this server, filled in and signed, and the settings of each edge SDK;
 * then waits for the thing's first event and says when it arrives. The secret key lives only in this
 * page's state, as on the Key pairs page. A thing's page links here with `?thing=<thing_key>`, the
 * thing the commands are then for.
 */
export function ConnectPage() {
  const [keys, setKeys] = useState<GuideKeys | undefined>();
  const [thingKey, setThingKey] = useState(() => currentQuery().get('thing')?.trim() || 'my-first-device');
  useEffect(() => {
    const forget = () => setKeys(undefined);
    addEventListener('pagehide', forget);
    return () => removeEventListener('pagehide', forget);
  }, []);
  return (
    <section>
      <h1>Connect a device</h1>
      <p>
        A device signs what it sends with a key pair: an access key that names it, and a secret key that only the device
        and this server know. Make one, run a command below on any machine that reaches this server, and the first event
        shows up here.
      </p>
      <KeyPairStep keys={keys} onKeys={setKeys} />
      {keys && (
        <>
          <section class="panel" aria-labelledby="connect-send">
            <h2 id="connect-send">2. Send a first event</h2>
            <TextField
              label="Thing key"
              hint="the thing the commands register and send for"
              value={thingKey}
              onInput={(key) => setThingKey(key.trim())}
            />
            {thingKey && <Commands keys={keys} thingKey={thingKey} />}
          </section>
          {thingKey && <FirstEvent thingKey={thingKey} />}
        </>
      )}
    </section>
  );
}

function KeyPairStep({ keys, onKeys }: { keys: GuideKeys | undefined; onKeys: (keys: GuideKeys) => void }) {
  const mayCreate = useAllows('key_pair', 'create');
  const [name, setName] = useState('My first device');
  const action = useFieldAction(['key_pair.name']);
  const [own, setOwn] = useState({ accessKey: '', secretKey: '' });
  const create = async (event: Event) => {
    event.preventDefault();
    await action.run(async () => {
      const made = await answerByField(api.POST('/api/v3/key_pairs', { body: { key_pair: { name } } }));
      onKeys({ accessKey: made.key_pair.access_key, secretKey: made.key_pair.secret_key ?? '' });
    });
  };
  if (keys) {
    return (
      <section class="panel" aria-labelledby="connect-keys">
        <h2 id="connect-keys">1. Key pair</h2>
        <p>
          Access key <code>{keys.accessKey}</code>. The secret key is in the commands below: copy them now, it is not
          shown again once you leave this page.
        </p>
      </section>
    );
  }
  return (
    <section class="panel" aria-labelledby="connect-keys">
      <h2 id="connect-keys">1. Key pair</h2>
      {mayCreate && (
        <form onSubmit={create} aria-label="Create a key pair">
          <TextField label="Name" required value={name} onInput={setName} error={action.of('key_pair.name')} />
          <FormActions action={action} submit="Create key pair" />
        </form>
      )}
      <form
        aria-label="Use a key pair you have"
        onSubmit={(event) => {
          event.preventDefault();
          onKeys({ accessKey: own.accessKey.trim(), secretKey: own.secretKey.trim() });
        }}
      >
        <p>{mayCreate ? 'Or use a key pair you have:' : 'Use a key pair you have:'}</p>
        <TextField
          label="Access key"
          required
          value={own.accessKey}
          onInput={(accessKey) => setOwn({ ...own, accessKey })}
        />
        <TextField
          label="Secret key"
          required
          type="password"
          autoComplete="off"
          value={own.secretKey}
          onInput={(secretKey) => setOwn({ ...own, secretKey })}
        />
        <button type="submit" class="secondary">
          Use these keys
        </button>
      </form>
    </section>
  );
}

function Commands({ keys, thingKey }: { keys: GuideKeys; thingKey: string }) {
  const settings = useLoad(async () => (await answer(api.GET('/api/v3/device_settings', {}))).device_settings, []);
  const secure = location.protocol === 'https:';
  const http = { host: location.hostname, port: location.port || (secure ? '443' : '80'), secure };
  const mqttPort = settings.data?.external_broker
    ? undefined
    : (settings.data?.mqtt_port ?? settings.data?.mqtts_port ?? undefined);
  return (
    <>
      <Copyable label="With curl (HTTP)" text={curlCommands(location.origin, keys, thingKey)} />
      {mqttPort !== undefined && (
        <Copyable
          label="With mosquitto_pub (MQTT)"
          text={mosquittoCommands(location.hostname, mqttPort, keys, thingKey)}
        />
      )}
      <h3>With an edge SDK</h3>
      <p>The Python, C, Go, Java and Ruby edge SDKs work unchanged with these settings:</p>
      {sdkSettings(http, mqttPort, keys).map(({ sdk, settings: text }) => (
        <Copyable key={sdk} label={`Settings for the ${sdk} SDK`} text={text} />
      ))}
    </>
  );
}

/** How much earlier than the page began waiting a device's clock may stamp its first event. */
const CLOCK_SLACK_S = 300;

/**
 * Waits, live, for the thing's first event, and says when it arrives. An event sent while the
 * connection was lost is not replayed (docs/realtime.md): once the subscription is accepted again,
 * the thing's last event is read, and taken if it was stamped after the page began waiting.
 */
function FirstEvent({ thingKey }: { thingKey: string }) {
  const [first, setFirst] = useState<{ timestamp: number; data: Record<string, unknown> } | undefined>();
  const [refused, setRefused] = useState<string | undefined>();
  const mayReadThings = useMayRead('thing');
  useEffect(() => {
    setFirst(undefined);
    let current = true;
    const since = Date.now() / 1000 - CLOCK_SLACK_S;
    const readMissed = async () => {
      const { thing } = await answer(
        api.GET('/api/v3/things/{thing_key}', { params: { path: { thing_key: thingKey } } }),
      );
      const last = thing.last_event;
      if (!current || typeof last?.timestamp !== 'number' || last.timestamp < since) return;
      const data = (last.data ?? {}) as Record<string, unknown>;
      setFirst((shown) => shown ?? { timestamp: last.timestamp as number, data });
    };
    // Whether the connection was lost since the page began waiting (before or after the subscription
    // was first accepted): its next acceptance reads what was missed.
    let lost = false;
    const stopResume = realtime.onResume(() => {
      lost = true;
    });
    // Not filtered by thing: a filter naming a thing that does not exist yet is refused.
    const stop = realtime.subscribe(
      'events',
      {},
      (message) => {
        if (message.type === 'error') return setRefused(String(message.message ?? message.code));
        if (message.type !== 'event' || message.thing_key !== thingKey) return;
        setFirst(
          (shown) => shown ?? { timestamp: message.timestamp as number, data: message.data as Record<string, unknown> },
        );
      },
      () => {
        // A thing not made yet (404) has sent nothing: it is still waited for.
        if (lost && mayReadThings !== false) readMissed().catch(() => undefined);
      },
    );
    return () => {
      current = false;
      stop();
      stopResume();
    };
  }, [thingKey]);
  return (
    <section class="panel" aria-labelledby="connect-wait">
      <h2 id="connect-wait">3. Watch it arrive</h2>
      <Failure message={refused} />
      <p role="status">
        {first ? (
          <>
            First event received from {thingKey} at {showTime(first.timestamp)}:{' '}
            {Object.entries(first.data)
              .map(([metric, value]) => `${metric} ${showValue(value)}`)
              .join(', ')}
            . <Link to={`things/${segment(thingKey)}`}>Open {thingKey}</Link>
          </>
        ) : (
          `Waiting for the first event from ${thingKey}…`
        )}
      </p>
    </section>
  );
}
