import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/core/config.ts';
import { openFileLimit, RESERVED_FILES } from '../../src/core/open-files.ts';

/** Runs limitHeapGrowth in a node of its own, started with `nodeArgs`; answers what it returned. */
function limitInChild(nodeArgs: string[]): string {
  const script = "import('./src/core/heap.ts').then((m) => process.stdout.write(String(m.limitHeapGrowth(100))))";
  const child = spawnSync(process.execPath, ['--import', 'tsx', ...nodeArgs, '--input-type=module', '-e', script], {
    encoding: 'utf8',
  });
  assert.equal(child.status, 0, child.stderr);
  return child.stdout;
}

describe('configuration', () => {
  it('when HEAP_GROWING_PERCENT is absent then the heap may grow to twice the live size; 0 leaves V8 its own', () => {
    assert.equal(loadConfig({}).heapGrowingPercent, 100);
    assert.equal(loadConfig({ HEAP_GROWING_PERCENT: '0' }).heapGrowingPercent, 0);
    assert.equal(loadConfig({ HEAP_GROWING_PERCENT: '250' }).heapGrowingPercent, 250);
  });

  it('when HEAP_GROWING_PERCENT is not a whole percentage then the configuration is refused', () => {
    for (const text of ['-1', '1.5', 'half', '1001', ' ', '0x64', '1e2']) {
      assert.throws(() => loadConfig({ HEAP_GROWING_PERCENT: text }), ConfigError, text);
    }
  });

  it('when EVENT_WRITE_SPACING_MS is absent then event transactions start at most every 2 ms; 0 to 1000 is taken, anything else refused', () => {
    assert.equal(loadConfig({}).eventWriteSpacingMs, 2);
    assert.equal(loadConfig({ EVENT_WRITE_SPACING_MS: '0' }).eventWriteSpacingMs, 0);
    assert.equal(loadConfig({ EVENT_WRITE_SPACING_MS: '5' }).eventWriteSpacingMs, 5);
    for (const text of ['1001', '-1', '2.5', '5ms', 'x']) {
      assert.throws(() => loadConfig({ EVENT_WRITE_SPACING_MS: text }), /EVENT_WRITE_SPACING_MS/, text);
    }
  });

  it('when a port, a limit or the password hash cost is not plain decimal then the configuration is refused, naming it', () => {
    for (const text of ['0x1F90', '1e3', ' ', '8080.0', '-1']) {
      assert.throws(() => loadConfig({ PORT: text }), /PORT must be a port number/, text);
      assert.throws(() => loadConfig({ MQTT_MAX_PENDING: text }), /MQTT_MAX_PENDING must be a positive integer/, text);
      assert.throws(() => loadConfig({ THINGBASE_PASSWORD_HASH_COST: text }), /THINGBASE_PASSWORD_HASH_COST/, text);
    }
    for (const text of ['1000', '262144', '1']) {
      assert.throws(() => loadConfig({ THINGBASE_PASSWORD_HASH_COST: text }), /a power of two/, text);
    }
    assert.equal(loadConfig({ PORT: ' 8080 ' }).port, 8080);
    assert.equal(loadConfig({ MQTT_MAX_PENDING: '500' }).mqttMaxPending, 500);
    assert.equal(loadConfig({ THINGBASE_PASSWORD_HASH_COST: '1024' }).passwordHashCost, 1024);
    assert.equal(loadConfig({}).passwordHashCost, 16384);
  });

  it('when node is started with its own --heap-growing-percent then the server keeps it', () => {
    const large = ['--max-old-space-size=4096'];
    assert.equal(limitInChild(large), 'true');
    assert.equal(limitInChild([...large, '--heap-growing-percent=300']), 'false');
    assert.equal(limitInChild([...large, '--heap_growing_percent=300']), 'false');
  });

  it('when the heap limit is under 2 GB then V8 keeps its own factor, which is no larger there', () => {
    assert.equal(limitInChild(['--max-old-space-size=1024']), 'false');
    assert.equal(limitInChild(['--max-old-space-size=2048']), 'true');
  });

  it('when a duration is written in seconds, minutes, hours or days then it is read in seconds; anything else is refused naming the setting', () => {
    assert.equal(loadConfig({ TOKEN_IDLE_TTL: '3600' }).tokenIdleTtlSeconds, 3600);
    assert.equal(loadConfig({ TOKEN_IDLE_TTL: '45s' }).tokenIdleTtlSeconds, 45);
    assert.equal(loadConfig({ TOKEN_IDLE_TTL: '90m' }).tokenIdleTtlSeconds, 5400);
    assert.equal(loadConfig({ TOKEN_IDLE_TTL: ' 12 h ' }).tokenIdleTtlSeconds, 43_200);
    assert.equal(loadConfig({ TOKEN_MAX_TTL: '7d' }).tokenMaxTtlSeconds, 604_800);
    assert.equal(loadConfig({ DELIVERY_TIMEOUT: '2m' }).deliveryTimeoutMs, 120_000);
    for (const text of ['1.5h', 'ten', '-5', '5w', 'h']) {
      assert.throws(() => loadConfig({ TOKEN_IDLE_TTL: text }), /TOKEN_IDLE_TTL must be a duration/, text);
    }
  });

  it('when a switch is yes, on, 1 or true (any case) then it is on; no, off, 0, false or empty, off; anything else is refused', () => {
    for (const text of ['yes', 'ON', '1', 'True'])
      assert.equal(loadConfig({ TRUST_PROXY: text }).trustProxy, true, text);
    for (const text of ['no', 'Off', '0', 'FALSE', '']) {
      assert.equal(loadConfig({ TRUST_PROXY: text }).trustProxy, false, text);
    }
    assert.throws(
      () => loadConfig({ ALLOW_PRIVATE_WEBHOOKS: 'maybe' }),
      /ALLOW_PRIVATE_WEBHOOKS must be true or false/,
    );
  });

  it('when the connection limits are not set then MQTT may take the whole socket budget, HTTP a quarter of it, a new connection 10 s to speak and a request 5 minutes to arrive', () => {
    const files = openFileLimit();
    const config = loadConfig({});
    assert.equal(config.socketBudget, files === undefined ? 100_000 : files - RESERVED_FILES);
    assert.equal(config.mqttMaxConnections, config.socketBudget);
    assert.equal(config.httpMaxConnections, Math.ceil(config.socketBudget / 4));
    assert.equal(config.connectTimeoutMs, 10_000);
    assert.equal(loadConfig({ HTTP_MAX_CONNECTIONS: '50' }).httpMaxConnections, 50);
    assert.equal(loadConfig({ CONNECT_TIMEOUT: '1m' }).connectTimeoutMs, 60_000);
    assert.throws(() => loadConfig({ HTTP_MAX_CONNECTIONS: '0' }), /HTTP_MAX_CONNECTIONS must be a positive integer/);
    assert.throws(() => loadConfig({ CONNECT_TIMEOUT: '0' }), /CONNECT_TIMEOUT must be at least 1s/);
    assert.throws(() => loadConfig({ CONNECT_TIMEOUT: '500ms' }), /CONNECT_TIMEOUT must be a duration/);
    assert.equal(config.requestTimeoutMs, 300_000);
    assert.equal(loadConfig({ REQUEST_TIMEOUT: '30s' }).requestTimeoutMs, 30_000);
    assert.throws(() => loadConfig({ REQUEST_TIMEOUT: '0' }), /REQUEST_TIMEOUT must be at least 1s/);
  });

  it('when MQTT_ENDPOINT still names the removed aedes broker then the configuration is refused; thingbase is accepted', () => {
    assert.doesNotThrow(() => loadConfig({ MQTT_ENDPOINT: 'thingbase' }));
    assert.doesNotThrow(() => loadConfig({ MQTT_ENDPOINT: '' }));
    for (const old of ['aedes', 'mosquitto']) {
      assert.throws(
        () => loadConfig({ MQTT_ENDPOINT: old }),
        new RegExp(`MQTT_ENDPOINT=${old} is no longer served: the device endpoint is the only embedded MQTT server`),
      );
    }
  });

  it('when the session settings are not set then 10,000 sessions of 100 messages are kept for up to 2 hours; an expiry past 24 days is refused', () => {
    const config = loadConfig({});
    assert.deepEqual(
      [config.mqttMaxSessions, config.mqttSessionMaxMessages, config.mqttSessionExpiryMs],
      [10_000, 100, 2 * 3600 * 1000],
    );
    const set = loadConfig({ MQTT_MAX_SESSIONS: '5', MQTT_SESSION_MAX_MESSAGES: '7', MQTT_SESSION_EXPIRY: '30m' });
    assert.deepEqual([set.mqttMaxSessions, set.mqttSessionMaxMessages, set.mqttSessionExpiryMs], [5, 7, 1_800_000]);
    assert.throws(() => loadConfig({ MQTT_SESSION_EXPIRY: '25d' }), /MQTT_SESSION_EXPIRY must be at most 24d/);
    assert.throws(() => loadConfig({ MQTT_MAX_SESSIONS: '0' }), /MQTT_MAX_SESSIONS must be a positive integer/);
  });

  it('when MQTT_KEEPALIVE is not set then the external broker connection keeps alive every 60 s; one past 65535 s or under 1 s is refused', () => {
    assert.equal(loadConfig({}).mqttKeepaliveSeconds, 60);
    assert.equal(loadConfig({ MQTT_KEEPALIVE: '2s' }).mqttKeepaliveSeconds, 2);
    assert.equal(loadConfig({ MQTT_KEEPALIVE: '5m' }).mqttKeepaliveSeconds, 300);
    assert.throws(() => loadConfig({ MQTT_KEEPALIVE: '65536' }), /MQTT_KEEPALIVE must be at most 65535s/);
    assert.throws(() => loadConfig({ MQTT_KEEPALIVE: '0s' }), /MQTT_KEEPALIVE must be at least 1s/);
  });

  it('when MQTT_SHARE_GROUP holds a slash, a wildcard or a space then the configuration is refused, naming it', () => {
    assert.equal(loadConfig({}).mqttShareGroup, 'thingbase');
    assert.equal(loadConfig({ MQTT_SHARE_GROUP: 'ops-eu_1' }).mqttShareGroup, 'ops-eu_1');
    for (const bad of ['ops/eu', 'ops+eu', 'ops#', 'ops eu']) {
      assert.throws(() => loadConfig({ MQTT_SHARE_GROUP: bad }), /MQTT_SHARE_GROUP must be a name without/, bad);
    }
  });

  it('when a count is not a positive integer or a port not one then the setting is named', () => {
    assert.equal(loadConfig({ MQTT_MAX_PENDING: '10' }).mqttMaxPending, 10);
    assert.equal(loadConfig({}).mqttMaxPartialBytes, 64 * 1024 * 1024);
    assert.equal(loadConfig({ MQTT_MAX_PARTIAL_BYTES: '1048576' }).mqttMaxPartialBytes, 1048576);
    assert.throws(
      () => loadConfig({ MQTT_MAX_PARTIAL_BYTES: '1e6' }),
      /MQTT_MAX_PARTIAL_BYTES must be a positive integer/,
    );
    for (const text of ['0', '-1', '2.5', 'many']) {
      assert.throws(() => loadConfig({ MQTT_MAX_PENDING: text }), /MQTT_MAX_PENDING must be a positive integer/, text);
    }
    assert.throws(() => loadConfig({ PORT: '70000' }), /PORT must be a port number/);
    assert.throws(() => loadConfig({ MQTT_PORT: 'one' }), /MQTT_PORT must be a port number/);
    const unset = loadConfig({ MQTT_PORT: '' });
    assert.equal(unset.mqttPort, 1883);
    assert.equal(unset.mqttPortExplicit, false);
  });

  it('when SQLITE_SYNCHRONOUS is given in any case then it is FULL or NORMAL; anything else is refused', () => {
    assert.equal(loadConfig({}).sqliteSynchronous, 'FULL');
    assert.equal(loadConfig({ SQLITE_SYNCHRONOUS: 'normal' }).sqliteSynchronous, 'NORMAL');
    assert.equal(loadConfig({ SQLITE_SYNCHRONOUS: 'Full' }).sqliteSynchronous, 'FULL');
    assert.throws(() => loadConfig({ SQLITE_SYNCHRONOUS: 'OFF' }), /SQLITE_SYNCHRONOUS must be FULL or NORMAL/);
  });

  it('when LOG_LEVEL or an address setting cannot be used then the start is refused naming it', () => {
    assert.throws(() => loadConfig({ LOG_LEVEL: 'bogus' }), /^ConfigError: LOG_LEVEL must be one of fatal, error/);
    assert.equal(loadConfig({ LOG_LEVEL: 'debug' }).logLevel, 'debug');
    assert.equal(loadConfig({ LOG_LEVEL: '' }).logLevel, 'info');
    const cases: [string, string, string][] = [
      ['PUBLIC_BASE_URL', 'notaurl', 'https://iot.example.com'],
      ['PUBLIC_BASE_URL', 'ftp://iot.example.com', 'http://10.0.0.5:3000'],
      ['SMTP_URL', 'notaurl', 'smtp://user:pass@mail.example.com:587'],
      ['SMTP_URL', 'http://mail.example.com', 'smtps://mail.example.com'],
      ['SMS_URL', 'notaurl', 'https://sms.example.com/send'],
      ['MQTT_URL', 'notaurl', 'mqtt://127.0.0.1:1883'],
      ['MQTT_URL', 'mqtt://', 'mqtts://broker.example.com:8883'],
    ];
    for (const [name, bad, good] of cases) {
      assert.throws(
        () => loadConfig({ [name]: bad }),
        (error: Error) => {
          assert.ok(error instanceof ConfigError);
          assert.match(error.message, new RegExp(`^${name} must be a URL`), `${name}=${bad}`);
          return true;
        },
      );
      assert.doesNotThrow(() => loadConfig({ [name]: good }), `${name}=${good}`);
    }
  });

  it('when MAP_TILE_URL is not an http(s) address with {z}, {x} and {y} then the start is refused naming it; unset means no tiles', () => {
    assert.equal(loadConfig({}).mapTiles, undefined);
    for (const bad of ['notaurl', 'ftp://tiles.example.org/{z}/{x}/{y}.png', 'https://tiles.example.org/{z}/{x}.png']) {
      assert.throws(
        () => loadConfig({ MAP_TILE_URL: bad }),
        /^ConfigError: MAP_TILE_URL must be an http\(s\) address/,
        bad,
      );
    }
    assert.deepEqual(loadConfig({ MAP_TILE_URL: 'https://{s}.tile.example.org/{z}/{x}/{y}.png' }).mapTiles, {
      url: 'https://{s}.tile.example.org/{z}/{x}/{y}.png',
      attribution: '',
    });
  });

  it('when the server listens on every address then its public address names the loopback; PUBLIC_BASE_URL wins, without a trailing slash', () => {
    assert.equal(loadConfig({ HOST: '0.0.0.0', PORT: '8080' }).publicBaseUrl, 'http://127.0.0.1:8080');
    assert.equal(loadConfig({ HOST: '::' }).publicBaseUrl, 'http://127.0.0.1:3000');
    assert.equal(loadConfig({ HOST: 'iot.example.com' }).publicBaseUrl, 'http://iot.example.com:3000');
    assert.equal(
      loadConfig({ HOST: '0.0.0.0', PUBLIC_BASE_URL: 'https://iot.example.com//' }).publicBaseUrl,
      'https://iot.example.com',
    );
  });
});
