/**
 * Carries instructions to devices over MQTT (docs/devices.md, "Instructions"): to
 * `Altizon/Datonis/<access key>/thing/<thing key>/executeInstruction` at QoS 2, once for each key pair
 * of the thing's organisation (the topic and the signature are per key pair; only devices subscribed to
 * the topic get it). An instruction not yet acknowledged is sent again to a device that subscribes
 * again, since every SDK connects with a clean session.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { DeviceAuthenticator } from '../devices/authentication.ts';
import { instructionMessage } from '../instructions/message.ts';
import type { InstructionCarrier } from '../instructions/service.ts';
import { markInstructionDelivered, pendingInstructions, unacknowledgedInstructions } from '../instructions/service.ts';
import type { Store } from '../store/store.ts';
import type { InstructionRow } from '../store/tables.ts';
import { instructionTopic, thingOfTopic } from './topics.ts';

/** How a broker sends an instruction message at QoS 2 and reports its delivery. */
export interface InstructionLink {
  /**
   * Sends `payload` to the devices subscribed to `topic`, or only to `connection` (the broker's number
   * of one that has just subscribed). The link calls `delivered(alertKey)` once a device has the
   * message.
   */
  publish(topic: string, payload: string, alertKey: string, connection?: number): Promise<void>;
}

/** How many pending instructions a connection to an external broker sends again at most (sendPending). */
export const PENDING_SENT_AGAIN = 1000;

export class MqttInstructions implements InstructionCarrier {
  private link: InstructionLink | undefined;

  constructor(
    private readonly store: Store,
    private readonly authenticator: DeviceAuthenticator,
    private readonly log: FastifyBaseLogger,
  ) {}

  connect(link: InstructionLink): void {
    this.link = link;
  }

  /** To every key pair of the organisation; failures are logged, the instruction is sent again later. */
  async send(instruction: InstructionRow): Promise<void> {
    try {
      const pairs = await this.accessKeysOf(instruction.organisation_key);
      // Together: through an external broker each may wait a while for the broker (instruction-outbox.ts).
      await Promise.all(pairs.map((accessKey) => this.sendTo(instruction, accessKey)));
    } catch (error) {
      this.log.warn(
        { err: error, instruction: instruction.instruction_key },
        'instruction not sent; it is sent again when the device subscribes',
      );
    }
  }

  /**
   * A device subscribed to an instruction topic: it gets what is not yet acknowledged for that thing, or
   * for every thing of its organisation when it subscribed with `+`.
   */
  async subscribed(accessKey: string, topic: string, connection: number): Promise<void> {
    const thingKey = thingOfTopic(topic);
    if (thingKey === undefined) return;
    try {
      const credentials = await this.authenticator.credentials(accessKey);
      if (!credentials) return;
      const rows = await unacknowledgedInstructions(
        this.store.db,
        credentials.principal.organisationKey,
        thingKey === '+' ? undefined : thingKey,
      );
      for (const row of rows.reverse()) await this.sendTo(row, accessKey, connection);
    } catch (error) {
      this.log.warn({ err: error }, 'instructions not sent again after a subscription');
    }
  }

  /**
   * Through an external broker, which says nothing of subscriptions: sends again the instructions no
   * broker has taken (status `pending`: held while it was away and dropped past the outbox's bounds, or
   * by a server stopped meanwhile, or stored by a server without MQTT), the newest `limit` of them, oldest
   * first, but those `carried` still (on their way). Answers how many were sent (docs/devices.md,
   * "Instructions").
   */
  async sendPending(carried: (alertKey: string) => boolean, limit = PENDING_SENT_AGAIN): Promise<number> {
    const rows = (await pendingInstructions(this.store.db, limit)).filter((row) => !carried(row.alert_key));
    const pairs = new Map<string, Promise<string[]>>();
    for (const row of rows.reverse()) {
      let accessKeys = pairs.get(row.organisation_key);
      if (!accessKeys) {
        accessKeys = this.accessKeysOf(row.organisation_key);
        pairs.set(row.organisation_key, accessKeys);
      }
      for (const accessKey of await accessKeys) await this.sendTo(row, accessKey);
    }
    return rows.length;
  }

  private async accessKeysOf(organisationKey: string): Promise<string[]> {
    const rows = await this.store.db
      .selectFrom('key_pairs')
      .select('access_key')
      .where('organisation_key', '=', organisationKey)
      .execute();
    return rows.map((r) => r.access_key);
  }

  /** A device has the message (QoS 2 handshake done; through an external broker: that broker has it). */
  delivered(alertKey: string): void {
    markInstructionDelivered(this.store.db, alertKey).catch((error) =>
      this.log.warn({ err: error }, 'instruction status not updated'),
    );
  }

  private async sendTo(instruction: InstructionRow, accessKey: string, connection?: number): Promise<void> {
    if (!this.link) return;
    const credentials = await this.authenticator.credentials(accessKey);
    if (!credentials) return;
    const message = instructionMessage(instruction, accessKey, credentials.secretKey);
    await this.link.publish(
      instructionTopic(accessKey, instruction.thing_key),
      message,
      instruction.alert_key,
      connection,
    );
  }
}
