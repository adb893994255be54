/**
 * `POST /api/v3/gateway/register` in its two forms (docs/gateways.md, "Registration"): the declared one
 * (`gateway_key`, `type`, `version`, `configuration`) and the example one (`gateway: {gateway_key,
 * gateway_type, gateway_version, config}`). Both become one update of the gateway.
 */
import { Type } from '@sinclair/typebox';
import { invalidParam, requiredParam } from '../core/errors.ts';
import { compileParams } from '../core/http/validation.ts';
import { readConfiguration } from './configuration.ts';
import { type GatewayChanges, type RegisterGatewayParams, RegistrationConfiguration } from './schemas.ts';

export interface Registration {
  gatewayKey: string;
  changes: GatewayChanges;
  /** Where the adapters came from, for error params. */
  adaptersParam: string;
}

// One validator per place the configuration can come from, so errors name the parameter as sent.
const validators = {
  configuration: compileParams(Type.Object({ configuration: RegistrationConfiguration })),
  'gateway.config': compileParams(Type.Object({ gateway: Type.Object({ config: RegistrationConfiguration }) })),
};

/** One value given in either form; giving it in both with different values is a 400. */
function either<T>(declared: T | undefined, example: T | undefined, exampleParam: string, declaredParam: string) {
  if (declared !== undefined && example !== undefined && JSON.stringify(declared) !== JSON.stringify(example)) {
    throw invalidParam(exampleParam, `differs from ${declaredParam}`);
  }
  return example !== undefined ? example : declared;
}

type ConfigurationDocument = GatewayChanges & { gateway_key?: string };

function decodedConfiguration(value: string | object, param: keyof typeof validators): ConfigurationDocument {
  const document = readConfiguration(value, param);
  if (param === 'configuration') {
    const checked = validators.configuration({ configuration: document });
    return checked.configuration as ConfigurationDocument;
  }
  const checked = validators['gateway.config']({ gateway: { config: document } });
  return (checked.gateway as { config: ConfigurationDocument }).config;
}

export function readRegistration(params: RegisterGatewayParams): Registration {
  const example = params.gateway;
  const gatewayKey = either(params.gateway_key, example?.gateway_key, 'gateway.gateway_key', 'gateway_key');
  if (gatewayKey === undefined) throw requiredParam('gateway_key');
  const type = either(params.type, example?.gateway_type, 'gateway.gateway_type', 'type');
  const version = either(params.version, example?.gateway_version, 'gateway.gateway_version', 'version');
  const value = either(params.configuration, example?.config, 'gateway.config', 'configuration');
  const param = example?.config !== undefined ? 'gateway.config' : 'configuration';

  let changes: GatewayChanges = {};
  if (value !== undefined) {
    const { gateway_key: namedKey, ...rest } = decodedConfiguration(value, param);
    if (namedKey !== undefined && namedKey !== gatewayKey) {
      throw invalidParam(`${param}.gateway_key`, 'names another gateway than the one registering');
    }
    changes = rest;
  }
  // The explicit parameters say what the gateway runs now; they win over the configuration's copy.
  if (type !== undefined) changes.gateway_type = type;
  if (version !== undefined) changes.gateway_version = version;
  return { gatewayKey, changes, adaptersParam: `${param}.adapters` };
}
