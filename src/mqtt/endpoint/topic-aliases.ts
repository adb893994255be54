/**
 * MQTT 5 topic aliases a device sets on its connection (docs/devices.md, "The device endpoint"): a PUBLISH may name
 * its topic and an alias (setting it), the alias alone with an empty topic (using it), or the topic
 * alone. Aliases run from 1 to the maximum the endpoint announced in its CONNACK.
 */
export class TopicAliases {
  private readonly topics = new Map<number, string>();

  constructor(private readonly maximum: number) {}

  /**
   * The topic a PUBLISH is for, setting the alias when it names both; else why the connection is
   * closed: `invalid`, an alias out of range (MQTT 5's 0x94, Topic Alias invalid), or `protocol`, an
   * empty topic with no alias or with one never set (a protocol error, 0x82: MQTT 5 §3.3.4).
   */
  resolve(topic: string, alias: number | undefined): string | { refused: 'invalid' | 'protocol' } {
    if (alias === undefined) return topic === '' ? { refused: 'protocol' } : topic;
    if (!(alias >= 1 && alias <= this.maximum)) return { refused: 'invalid' };
    if (topic !== '') {
      this.topics.set(alias, topic);
      return topic;
    }
    return this.topics.get(alias) ?? { refused: 'protocol' };
  }
}
