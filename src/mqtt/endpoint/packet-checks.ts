/**
 * What MQTT asks of the text in a packet beyond its framing (docs/devices.md, "MQTT"): a topic name or
 * filter is well-formed UTF-8 without U+0000 (MQTT 3.1.1 §1.5.3, MQTT 5 §1.5.4); a topic name has no
 * wildcard (§3.3.2); in a filter, `+` is a whole level and `#` a whole last level (§4.7.1). The parsers
 * decode text as Node does, an ill-formed sequence becoming U+FFFD: a topic holding U+FFFD is taken for
 * ill-formed (no device topic holds one; a client id holding one is refused at CONNECT).
 */

const ILL_FORMED = /[\0\uFFFD]/;
const WILDCARD = /[+#]/;

/** Why a PUBLISH's topic name is no topic name, or undefined. */
export function topicNameFault(name: string): 'malformed' | 'wildcard' | undefined {
  if (ILL_FORMED.test(name)) return 'malformed';
  if (WILDCARD.test(name)) return 'wildcard';
  return undefined;
}

/** Whether a SUBSCRIBE's or UNSUBSCRIBE's topic filter is no topic filter. */
export function filterIsMalformed(filter: string): boolean {
  if (filter === '' || ILL_FORMED.test(filter)) return true;
  if (!WILDCARD.test(filter)) return false;
  const levels = filter.split('/');
  return levels.some(
    (level, i) =>
      (level.includes('+') && level !== '+') || (level.includes('#') && (level !== '#' || i !== levels.length - 1)),
  );
}

/** Whether a client id holds what a topic may not, or what makes its device topics no device topics. */
export const clientIdIsUnfit = (clientId: string): boolean => /[/+#\0\uFFFD]/.test(clientId);

/** Where MQTT 5 properties are read: a packet's own, or a CONNECT's will's. */
export type PropertiesPlace =
  | 'connect'
  | 'will'
  | 'publish'
  | 'puback'
  | 'pubrec'
  | 'pubrel'
  | 'pubcomp'
  | 'subscribe'
  | 'unsubscribe'
  | 'disconnect';

const ACK_PROPERTIES = ['reasonString', 'userProperties'];
/** The properties each packet a client sends may hold (MQTT 5 §2.2.2.2). */
const ALLOWED: Record<PropertiesPlace, ReadonlySet<string>> = {
  connect: new Set([
    'sessionExpiryInterval',
    'receiveMaximum',
    'maximumPacketSize',
    'topicAliasMaximum',
    'requestResponseInformation',
    'requestProblemInformation',
    'userProperties',
    'authenticationMethod',
    'authenticationData',
  ]),
  will: new Set([
    'willDelayInterval',
    'payloadFormatIndicator',
    'messageExpiryInterval',
    'contentType',
    'responseTopic',
    'correlationData',
    'userProperties',
  ]),
  // A client's PUBLISH may not hold a Subscription Identifier either ([MQTT-3.3.4-6]): told apart below.
  publish: new Set([
    'payloadFormatIndicator',
    'messageExpiryInterval',
    'topicAlias',
    'responseTopic',
    'correlationData',
    'userProperties',
    'contentType',
  ]),
  puback: new Set(ACK_PROPERTIES),
  pubrec: new Set(ACK_PROPERTIES),
  pubrel: new Set(ACK_PROPERTIES),
  pubcomp: new Set(ACK_PROPERTIES),
  subscribe: new Set(['subscriptionIdentifier', 'userProperties']),
  unsubscribe: new Set(['userProperties']),
  disconnect: new Set(['sessionExpiryInterval', 'reasonString', 'userProperties', 'serverReference']),
};

/** The properties a client may send whose value is a flag, 0 or 1 (MQTT 5 §3.1.2.11.6, §3.1.2.11.7, §3.3.2.3.2). */
const FLAGS: ReadonlySet<string> = new Set([
  'requestResponseInformation',
  'requestProblemInformation',
  'payloadFormatIndicator',
]);

/**
 * What is wrong with the MQTT 5 properties a client sent (as mqtt-packet reads them), or undefined:
 * a property the packet may not hold is a malformed packet (MQTT 5 §2.2.2.2); one given twice (which
 * mqtt-packet reads as a list; only User Properties may repeat), a Subscription Identifier in a client's
 * PUBLISH, Authentication Data without its method, or a flag of a value other than 0 or 1 (which
 * packet-parser.ts leaves a number, where mqtt-packet reads a flag as a boolean) is a protocol error.
 */
export function propertiesFault(
  place: string,
  properties: Record<string, unknown> | undefined,
): 'malformed' | 'protocolError' | undefined {
  // Packets of other types (any `cmd`) hold no properties a client may send, and are refused whole
  // (connection.ts).
  const allowed = (ALLOWED as Record<string, ReadonlySet<string> | undefined>)[place];
  if (properties === undefined || allowed === undefined) return undefined;
  let fault: 'protocolError' | undefined;
  for (const name in properties) {
    if (name === 'subscriptionIdentifier' && place === 'publish') {
      fault = 'protocolError';
      continue;
    }
    if (!allowed.has(name)) return 'malformed';
    const value = properties[name];
    if (name !== 'userProperties' && Array.isArray(value)) fault = 'protocolError';
    else if (FLAGS.has(name) && typeof value !== 'boolean') fault = 'protocolError';
  }
  if (properties.authenticationData !== undefined && properties.authenticationMethod === undefined) {
    fault = 'protocolError';
  }
  return fault;
}
