/**
 * The entity types audit trails name (`entity_type`). Apart from recorder.ts so that change revisions
 * (revisions.ts), which the recorder raises, can name them without importing the recorder.
 */
export type EntityType =
  | 'User'
  | 'Role'
  | 'Group'
  | 'Gateway'
  | 'Thing'
  | 'ThingTemplate'
  | 'Rule'
  | 'NotificationAction'
  | 'Instruction'
  | 'Organisation'
  | 'KeyPair';
