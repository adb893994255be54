/**
 * Versioned migrations, applied in name order on start. Never edit a released one: add the next.
 */
import type { Migration } from 'kysely';
import * as core from './001-core.ts';

export const MIGRATIONS: Record<string, Migration> = {
  '001-core': core,
};
