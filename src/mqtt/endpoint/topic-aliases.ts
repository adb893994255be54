/**
 * MQTT 5 topic aliases a device sets on its connection (docs/devices.md, "The device endpoint"): a PUBLISH may name
 * its topic and an alias (setting it), the alias alone with an empty topic (using it), or the topic
 * alone. Aliases run from 1 to the maximum the endpoint announced in its CONNACK.
 */
export class TopicAliases {
  private readonly topics = new Map<number, string>();

  constructor(private readonly maximum: number) {}

  /**
   * The topic a PUBLISH is for, setting the alias when it names both; undefined when the alias is out
   * of range, or used without ever being set (a protocol error: the connection is closed).
   */
  resolve(topic: string, alias: number | undefined): string | undefined {
    if (alias === undefined) return topic === '' ? undefined : topic;
    if (!(alias >= 1 && alias <= this.maximum)) return undefined;
    if (topic !== '') {
      this.topics.set(alias, topic);
      return topic;
    }
    return this.topics.get(alias);
  }
}
