/**
 * How each kind of notification action is carried out (docs/rules.md, "What each action does when its rule fires"). A sender resolves when the peer
 * has accepted the delivery and throws with a short reason when it has not.
 */
import { isIP } from 'node:net';
import type { Transporter } from 'nodemailer';
import { Agent, request } from 'undici';
import { sendableEmail } from '../actions/service.ts';
import { renderAlertMessage } from '../alerts/message.ts';
import { alertTypeName } from '../alerts/presenter.ts';
import { SYSTEM_ACTOR } from '../audit/recorder.ts';
import type { Config } from '../core/config.ts';
import type { Store } from '../store/store.ts';
import type { NotificationAction } from '../store/tables.ts';
import { updateThing } from '../things/service.ts';
import { guardedLookup, isPrivateAddress, PrivateAddressError, UndeliverableError } from './address-guard.ts';
import type { DeliveryPayload } from './service.ts';

export interface Delivery {
  deliveryKey: string;
  organisationKey: string;
  action: NotificationAction;
  payload: DeliveryPayload;
}

/** Most of a peer's answer that is read (and then dropped): answers are not stored. */
const MAX_RESPONSE_BYTES = 64 * 1024;

const thingToken = /\$(THING|SENSOR)\$/g;

/** The action's url, or an UndeliverableError: no attempt can call what is not a URL. */
function urlOf(text: string): URL {
  try {
    return new URL(text);
  } catch {
    throw new UndeliverableError("the action's url is not a URL");
  }
}

export class Senders {
  private readonly agent: Agent;
  private mailer: Transporter | undefined;

  constructor(
    private readonly store: Store,
    private readonly config: Config,
  ) {
    this.agent = new Agent({
      connect: {
        timeout: config.deliveryTimeoutMs,
        ...(config.allowPrivateWebhooks ? {} : { lookup: guardedLookup }),
      },
      headersTimeout: config.deliveryTimeoutMs,
      bodyTimeout: config.deliveryTimeoutMs,
    });
  }

  async close(): Promise<void> {
    this.mailer?.close();
    await this.agent.close();
  }

  send(delivery: Delivery): Promise<void> {
    switch (delivery.action.type) {
      case 'EmailNotificationAction':
        return this.email(delivery);
      case 'CallHttpUrlAction':
        return this.httpCall(delivery);
      case 'ThingUserDefinedPropertiesAction':
        return this.setProperties(delivery);
      case 'SMSNotificationAction':
        return this.sms(delivery);
      default:
        throw new Error(`unknown action type ${delivery.action.type}`);
    }
  }

  private async email({ action, payload }: Delivery): Promise<void> {
    if (!sendableEmail(action)) {
      throw new UndeliverableError("the action's recipients are not e-mail addresses, or its subject is not one line");
    }
    if (!this.config.smtpUrl) throw new Error('SMTP_URL is not set: e-mail cannot be sent');
    if (!this.mailer) {
      const url = new URL(this.config.smtpUrl);
      // Loaded with the first e-mail: a server that sends none never holds the mail library.
      const { default: nodemailer } = await import('nodemailer');
      this.mailer = nodemailer.createTransport({
        host: url.hostname,
        port: Number(url.port || (url.protocol === 'smtps:' ? 465 : 587)),
        secure: url.protocol === 'smtps:',
        ...(url.username
          ? { auth: { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } }
          : {}),
        connectionTimeout: this.config.deliveryTimeoutMs,
        greetingTimeout: this.config.deliveryTimeoutMs,
        socketTimeout: this.config.deliveryTimeoutMs,
      });
    }
    const level = payload.rule.alert_type === null ? 'Notice' : alertTypeName(payload.rule.alert_type);
    await this.mailer.sendMail({
      from: this.config.smtpFrom ?? fromAddress(this.config.smtpUrl),
      to: action.recipient ?? '',
      ...(action.cc ? { cc: action.cc } : {}),
      ...(action.bcc ? { bcc: action.bcc } : {}),
      subject: action.subject || `[${level}] ${payload.rule.name}: ${payload.thing.name}`,
      text: payload.message,
      // The whole attempt, as for HTTP calls: the timeouts above bound only silences, and a server that
      // answers a line at a time would hold the attempt, and the deliveries behind it, for ever.
      signal: AbortSignal.timeout(this.config.deliveryTimeoutMs),
    });
  }

  private async httpCall({ deliveryKey, action, payload }: Delivery): Promise<void> {
    const thingKey = encodeURIComponent(payload.thing.thing_key);
    const url = urlOf((action.url ?? '').replace(thingToken, thingKey));
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new UndeliverableError(`${url.protocol} URLs are not called`);
    }
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (!this.config.allowPrivateWebhooks && isIP(host) !== 0 && isPrivateAddress(host)) {
      throw new PrivateAddressError(
        `${host} is a private or loopback address (set ALLOW_PRIVATE_WEBHOOKS=true to allow)`,
      );
    }
    for (const [name, value] of Object.entries(parseObject(action.query))) url.searchParams.append(name, String(value));
    const method = (action.method ?? 'POST').toUpperCase();
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(parseObject(action.headers)))
      headers[name.toLowerCase()] = String(value);
    // Lets the peer drop a repeat of a delivery whose answer was cut off.
    headers['idempotency-key'] = deliveryKey;
    let body: string | undefined;
    if (method !== 'GET' && method !== 'HEAD') {
      body = action.body
        ? action.body.replace(thingToken, payload.thing.thing_key)
        : JSON.stringify({ rule: payload.rule, thing: payload.thing, event: payload.event, alert: payload.alert });
      headers['content-type'] ??= 'application/json';
    }
    const response = await request(url, {
      method: method as 'POST',
      headers,
      ...(body !== undefined ? { body } : {}),
      dispatcher: this.agent,
      signal: AbortSignal.timeout(this.config.deliveryTimeoutMs),
    });
    // The status is the peer's word: a 2xx accepts the delivery however its answer's body then comes
    // (slowly, cut off), so the attempt is recorded at once and the delivery never sent again for it.
    // The body is read on, as far as the timeout and MAX_RESPONSE_BYTES let, for the connection's reuse.
    void drain(response.body);
    if (response.statusCode < 200 || response.statusCode >= 300) {
      throw new Error(`the peer answered ${response.statusCode}`);
    }
  }

  private async setProperties({ organisationKey, action, payload }: Delivery): Promise<void> {
    // Stored in the v3 form whichever version created it (actions/versions.ts).
    const properties = (parseObject(action.body).user_defined_properties ?? {}) as Record<string, string>;
    await updateThing(
      this.store,
      { ...SYSTEM_ACTOR, userName: `rule ${payload.rule.name}` },
      [organisationKey],
      payload.thing.thing_key,
      { user_defined_properties: properties },
      { mergeProperties: true },
    );
  }

  private async sms({ action, payload }: Delivery): Promise<void> {
    if (!this.config.smsUrl) throw new Error('SMS_URL is not set: SMS cannot be sent');
    const message = action.body ? renderAlertMessage(action.body, payload.event.data, payload.thing) : payload.message;
    const response = await request(this.config.smsUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ to: action.phone_number, name: action.name, message }),
      signal: AbortSignal.timeout(this.config.deliveryTimeoutMs),
    });
    // As an HTTP call's: the status accepts it, whatever the body then does.
    void drain(response.body);
    if (response.statusCode < 200 || response.statusCode >= 300) {
      throw new Error(`the SMS gateway answered ${response.statusCode}`);
    }
  }
}

/** A JSON object held as text, or {} for anything else (an action body stored before it was checked). */
export function parseObject(text: string | null): Record<string, unknown> {
  if (!text) return {};
  try {
    const value = JSON.parse(text) as unknown;
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/**
 * Reads at most MAX_RESPONSE_BYTES of an answer, then stops reading it. Never fails: it runs after the
 * status has decided the attempt, and a body cut off or timed out changes nothing.
 */
async function drain(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<void> {
  let size = 0;
  try {
    for await (const chunk of body) {
      size += chunk.length;
      if (size > MAX_RESPONSE_BYTES) {
        body.destroy();
        return;
      }
    }
  } catch {
    // The answer ended early or its attempt's time ran out.
  }
}

/** Without SMTP_FROM: the SMTP user when it is an address, else thingbase@localhost. */
export function fromAddress(smtpUrl: string): string {
  try {
    const user = decodeURIComponent(new URL(smtpUrl).username);
    if (user.includes('@')) return user;
  } catch {
    // fall through
  }
  return 'thingbase@localhost';
}
