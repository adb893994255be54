/**
 * Serving devices through an external broker (MQTT_URL: Mosquitto, EMQX, ...). Thingbase subscribes
 * to the device topics there with shared subscriptions, so with several instances each message is
 * handled by exactly one. It cannot see a device's login, so it accepts only messages whose `hash`
 * checks out against the key pair named by their `access_key` member.
 */
import type { FastifyBaseLogger } from 'fastify';
import mqtt, { type MqttClient } from 'mqtt';
import { newKey } from '../core/keys.ts';
import type { DeviceAuthenticator } from '../devices/authentication.ts';
import type { DeviceService } from '../devices/service.ts';
import type { MqttInstructions } from './instructions.ts';
import { handleExternalBrokerMessage } from './messages.ts';
import { ackTopic, parseDeviceTopic, serverSubscriptions } from './topics.ts';

export interface ExternalBroker {
  close(): Promise<void>;
}

export async function connectExternalBroker(options: {
  url: string;
  /** Instances of one deployment share this group, so each message is handled once. */
  shareGroup: string;
  authenticator: DeviceAuthenticator;
  devices: DeviceService;
  log: FastifyBaseLogger;
  /** Instructions reach devices through this broker. */
  instructions?: MqttInstructions;
}): Promise<ExternalBroker> {
  const { authenticator, devices, log } = options;
  const client: MqttClient = await mqtt.connectAsync(options.url, {
    clientId: `thingbase-${newKey()}`,
    clean: true,
    protocolVersion: 4,
    reconnectPeriod: 1000,
  });
  client.on('message', (topicName, payload) => {
    const topic = parseDeviceTopic(topicName);
    if (!topic) return;
    handleExternalBrokerMessage(devices, { topic, payload, lookup: (ak) => authenticator.credentials(ak) }).then(
      (ack) => client.publish(ackTopic(topic.clientId), JSON.stringify(ack), { qos: 1 }),
      (error) => log.error(error, 'MQTT message failed'),
    );
  });
  client.on('error', (error) => log.warn(`MQTT broker ${options.url}: ${error.message}`));
  await client.subscribeAsync(serverSubscriptions(options.shareGroup), { qos: 1 });
  // Instructions: the broker cannot tell which devices subscribe, nor when one completes a handshake;
  // a message counts as delivered once the broker has it (docs/devices.md).
  options.instructions?.connect({
    publish: async (topic, payload, alertKey) => {
      await client.publishAsync(topic, payload, { qos: 2 });
      options.instructions?.delivered(alertKey);
    },
  });
  return { close: () => client.endAsync() };
}
