import type { TimeFormatter } from '../core/time.ts';
import type { OrganisationRow } from '../store/tables.ts';

export function presentOrganisation(row: OrganisationRow, time: TimeFormatter) {
  return {
    organisation_key: row.organisation_key,
    name: row.name,
    is_oem: row.is_oem === 1,
    parent_organisation_key: row.parent_organisation_key,
    license: { license_key: row.license_key },
    retention_days: row.retention_days ?? null,
    rollup_retention_days: row.rollup_retention_days ?? null,
    events_per_second: row.events_per_second ?? null,
    created_at: time(row.created_at),
    updated_at: time(row.updated_at),
  };
}
