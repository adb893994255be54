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
