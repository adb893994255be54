/**
 * The commands of the `Connect a device` guide, filled with this server's address and a key pair: the
 * device interface of docs/devices.md, signed as the edge SDKs sign.
 */
import { hmacHex } from '../device-signing.ts';

export interface GuideKeys {
  accessKey: string;
  secretKey: string;
}

/** A shell word in single quotes. */
const quoted = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`;

/** Without a name: a new thing is named after its key, and a thing that exists keeps its name. */
export const registerBody = (thingKey: string) => JSON.stringify({ thing_key: thingKey });
export const eventBody = (thingKey: string) => JSON.stringify({ thing_key: thingKey, data: { temperature: 21.5 } });

/**
 * Two curl commands: register the thing, then send it an event, each signed over its body. Each
 * prints the answer's body and status on a line of its own (`{} HTTP 200`), not run into the prompt.
 */
export function curlCommands(baseUrl: string, keys: GuideKeys, thingKey: string): string {
  const request = (path: string, body: string) =>
    `curl -s -w ' HTTP %{http_code}\\n' -X POST ${quoted(`${baseUrl}${path}`)} -H ${quoted(`X-Access-Key: ${keys.accessKey}`)} \\\n  -H ${quoted(`X-Dtn-Signature: ${hmacHex(keys.secretKey, body)}`)} -d ${quoted(body)}`;
  return [
    request('/api/v3/things/register.json', registerBody(thingKey)),
    request('/api/v3/things/event.json', eventBody(thingKey)),
  ].join('\n');
}

/** A message as the edge SDKs publish it: the JSON, then its hash, the access key and the protocol version. */
function mqttMessage(keys: GuideKeys, body: string): string {
  return `${body.slice(0, -1)},"hash":"${hmacHex(keys.secretKey, body)}","access_key":"${keys.accessKey}","aliot_protocol_version":2.0}`;
}

export function mosquittoCommands(host: string, port: number, keys: GuideKeys, thingKey: string): string {
  const clientId = thingKey.replace(/[^0-9A-Za-z_-]/g, '').slice(0, 64) || 'first-device';
  const publish = (kind: string, body: string) =>
    `mosquitto_pub -h ${quoted(host)} -p ${port} -i ${quoted(clientId)} -u ${quoted(keys.accessKey)} \\\n  -P ${quoted(hmacHex(keys.secretKey, keys.accessKey))} -q 1 -t ${quoted(`Altizon/Datonis/${clientId}/${kind}`)} \\\n  -m ${quoted(mqttMessage(keys, body))}`;
  return [publish('register', registerBody(thingKey)), publish('event', eventBody(thingKey))].join('\n');
}

/** What each public edge SDK is configured with. */
export function sdkSettings(
  http: { host: string; port: string; secure: boolean },
  mqttPort: number | undefined,
  keys: GuideKeys,
): { sdk: string; settings: string }[] {
  const transport = mqttPort === undefined ? 'http' : 'mqtt';
  const port = mqttPort === undefined ? http.port : String(mqttPort);
  const common = [
    `host = ${http.host}`,
    `port = ${port}`,
    `access_key = ${keys.accessKey}`,
    `secret_key = ${keys.secretKey}`,
  ];
  return [
    {
      sdk: 'Python',
      settings: `GatewayConfig('${keys.accessKey}', '${keys.secretKey}', '${transport}', None, '${http.host}', ${port})`,
    },
    { sdk: 'C', settings: [`protocol = ${transport}`, ...common].join('\n') },
    { sdk: 'Go', settings: [`protocol = ${transport}`, ...common].join('\n') },
    { sdk: 'Java', settings: [`protocol = ${transport}`, ...common].join('\n') },
    { sdk: 'Ruby', settings: [`protocol = ${transport}`, ...common].join('\n') },
  ];
}
