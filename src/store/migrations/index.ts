/**
 * Versioned migrations, applied in name order on start. Never edit a released one: add the next.
 */
import type { Migration } from 'kysely';
import * as core from './001-core.ts';
import * as things from './002-things.ts';
import * as devices from './003-devices.ts';
import * as rules from './004-rules.ts';
import * as rollups from './005-rollups.ts';
import * as eventCounts from './006-event-counts.ts';
import * as arrivalLag from './007-arrival-lag.ts';
import * as changeRevisions from './008-change-revisions.ts';
import * as apiKeys from './009-api-keys.ts';
import * as alertLifecycle from './010-alert-lifecycle.ts';
import * as retention from './011-retention.ts';
import * as usage from './012-usage.ts';
import * as eventBlocks from './013-event-blocks.ts';
import * as eventBlockPartitions from './014-event-block-partitions.ts';
import * as eventOrderIndex from './015-event-order-index.ts';
import * as eventBlockOrderIndex from './016-event-block-order-index.ts';
import * as eventMinutes from './017-event-minutes.ts';
import * as dashboards from './018-dashboards.ts';
import * as templateRollups from './019-template-rollups.ts';
import * as eventLimits from './020-event-limits.ts';
import * as actionSecrets from './021-action-secrets.ts';
import * as pendingInstructions from './022-pending-instructions.ts';

export const MIGRATIONS: Record<string, Migration> = {
  '001-core': core,
  '002-things': things,
  '003-devices': devices,
  '004-rules': rules,
  '005-rollups': rollups,
  '006-event-counts': eventCounts,
  '007-arrival-lag': arrivalLag,
  '008-change-revisions': changeRevisions,
  '009-api-keys': apiKeys,
  '010-alert-lifecycle': alertLifecycle,
  '011-retention': retention,
  '012-usage': usage,
  '013-event-blocks': eventBlocks,
  '014-event-block-partitions': eventBlockPartitions,
  '015-event-order-index': eventOrderIndex,
  '016-event-block-order-index': eventBlockOrderIndex,
  '017-event-minutes': eventMinutes,
  '018-dashboards': dashboards,
  '019-template-rollups': templateRollups,
  '020-event-limits': eventLimits,
  '021-action-secrets': actionSecrets,
  '022-pending-instructions': pendingInstructions,
};
