/**
 * The one mapping between the two versions of notification actions (docs/rules.md, "Notification
 * actions"). The store holds v3 names; v2 reads and writes the property-setting kind as
 * `SensorTraitsAction` with `traits` and the `$SENSOR$` url, and does not know SMS actions.
 */
export type ApiVersion = 'v2' | 'v3';

/** v3 type names, as stored. */
export const EMAIL = 'EmailNotificationAction';
export const HTTP_CALL = 'CallHttpUrlAction';
export const PROPERTIES = 'ThingUserDefinedPropertiesAction';
export const SMS = 'SMSNotificationAction';
export type StoredType = typeof EMAIL | typeof HTTP_CALL | typeof PROPERTIES | typeof SMS;

interface VersionMapping {
  /** Type names of this version, by stored name. */
  typeNames: Partial<Record<StoredType, string>>;
  /** Member wrapping the map of a property-setting action's body. */
  propertiesMember: string;
  /** Path of the fixed url of the property-setting kind, after the public base url. */
  propertiesPath: string;
}

export const VERSIONS: Record<ApiVersion, VersionMapping> = {
  v3: {
    typeNames: { [EMAIL]: EMAIL, [HTTP_CALL]: HTTP_CALL, [PROPERTIES]: PROPERTIES, [SMS]: SMS },
    propertiesMember: 'user_defined_properties',
    propertiesPath: '/api/v3/things/$THING$/set_user_defined_properties',
  },
  v2: {
    typeNames: { [EMAIL]: EMAIL, [HTTP_CALL]: HTTP_CALL, [PROPERTIES]: 'SensorTraitsAction' },
    propertiesMember: 'traits',
    propertiesPath: '/api/v1/sensors/$SENSOR$/set_traits',
  },
};

/** This version's type names, for schemas and filters. */
export const typeNamesOf = (version: ApiVersion): string[] => Object.values(VERSIONS[version].typeNames);

/** The stored type a version's type name stands for. */
export function storedTypeOf(version: ApiVersion, name: string): StoredType | undefined {
  const entry = Object.entries(VERSIONS[version].typeNames).find(([, n]) => n === name);
  return entry?.[0] as StoredType | undefined;
}

/** How a version names a stored type; undefined when the version does not know it (SMS in v2). */
export const typeNameIn = (version: ApiVersion, stored: string): string | undefined =>
  VERSIONS[version].typeNames[stored as StoredType];
