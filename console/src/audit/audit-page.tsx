import { useEffect, useState } from 'preact/hooks';
import { answer, api } from '../api/client.ts';
import { EmptyState } from '../components/empty-state.tsx';
import { Failure } from '../components/failure.tsx';
import { SearchField, SelectField } from '../components/field.tsx';
import { Pager } from '../components/pager.tsx';
import { useDebounced, useLoad } from '../components/use-load.ts';
import { keyClass, showTime } from '../format.ts';
import { choiceOf, currentQuery, keepQuery } from '../router.tsx';
import { changedFields } from './changes.ts';

const PER = 50;

/** The kinds of entity the API audits, as its `entity_type` names them, with their names in words. */
const ENTITY_TYPES = [
  ['', 'All'],
  ['Thing', 'Things'],
  ['Event', 'Events'],
  ['ThingTemplate', 'Templates'],
  ['Group', 'Groups'],
  ['Gateway', 'Gateways'],
  ['Alert', 'Alerts'],
  ['Rule', 'Rules'],
  ['NotificationAction', 'Notification actions'],
  ['Instruction', 'Instructions'],
  ['Dashboard', 'Dashboards'],
  ['KeyPair', 'Key pairs'],
  ['ApiKey', 'API keys'],
  ['User', 'Users'],
  ['Role', 'Roles'],
  ['Organisation', 'Organisations'],
] as const;

/** One entity of each kind in words, as the navigation names its pages (the API's `ThingTemplate`: Template). */
const ENTITY_NAMES: Record<string, string> = {
  ThingTemplate: 'Template',
  NotificationAction: 'Notification action',
  KeyPair: 'Key pair',
  ApiKey: 'API key',
};

/** Who changed what, newest first (the audit trails written with every change). */
export function AuditPage() {
  // The filters and page live in the query string, so that Back (or a link) finds them again.
  const [search, setSearch] = useState(() => currentQuery().get('search') ?? '');
  const [entityType, setEntityType] = useState<string>(() => choiceOf(ENTITY_TYPES, currentQuery().get('entity_type')));
  const [page, setPage] = useState(() => Math.max(1, Number(currentQuery().get('page')) || 1));
  useEffect(
    () => keepQuery({ search, entity_type: entityType, page: page > 1 ? String(page) : '' }),
    [search, entityType, page],
  );
  const keywords = useDebounced(search.trim(), 250);
  const list = useLoad(
    () =>
      answer(
        api.GET('/api/v3/audit_trails', {
          params: {
            query: {
              page,
              per: PER,
              ...(keywords ? { search: keywords } : {}),
              ...(entityType ? { entity_type: entityType } : {}),
            },
          },
        }),
      ),
    [page, keywords, entityType],
  );
  return (
    <section>
      <h1>Audit trail</h1>
      <div class="filters">
        <SearchField
          label="Search the audit trail"
          hint="keywords in the action, entity type, name or key"
          value={search}
          onInput={(value) => {
            setSearch(value);
            setPage(1);
          }}
        />
        <SelectField
          label="Entity type"
          value={entityType}
          options={ENTITY_TYPES}
          onChange={(value) => {
            setEntityType(value);
            setPage(1);
          }}
        />
      </div>
      <Failure message={list.error} />
      {/* No changes at all: the empty state alone; none the search or entity type match: said plainly. */}
      {list.data?.total_count === 0 &&
        (keywords === '' && entityType === '' ? (
          <EmptyState title="No changes yet">
            Every change made to this organisation's things, templates, rules, users and the rest is listed here, with
            who made it and what it changed.
          </EmptyState>
        ) : (
          <p role="status">No change matches the search and entity type.</p>
        ))}
      {list.data && list.data.total_count > 0 && (
        <table class="cards">
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">User</th>
              <th scope="col">Action</th>
              <th scope="col">Entity</th>
              <th scope="col">Name</th>
              <th scope="col">Key</th>
              <th scope="col">Changes</th>
            </tr>
          </thead>
          <tbody>
            {list.data.audit_trails.map((trail) => (
              <tr key={trail.audit_trail_key}>
                <td>{showTime(trail.timestamp)}</td>
                <td data-label="User">
                  {trail.user_name} <small>({trail.role_name})</small>
                </td>
                <td data-label="Action">{trail.action_taken}</td>
                <td data-label="Entity">{ENTITY_NAMES[trail.entity_type] ?? trail.entity_type}</td>
                <td data-label="Name">{trail.entity_name ?? ''}</td>
                {/* A generated key (10 characters) is read and copied whole; a long key of the user's may break. */}
                <td data-label="Key" class={keyClass(trail.entity_key)}>
                  <code>{trail.entity_key}</code>
                </td>
                <td data-label="Changes">
                  <Changes before={trail.old_entity_contents} after={trail.new_entity_contents} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {list.data && list.data.total_count > 0 && (
        <Pager page={page} per={PER} total={list.data.total_count} noun="changes" onPage={setPage} />
      )}
    </section>
  );
}

/** The fields a change touched, before and after, behind a disclosure: the list stays one line a change. */
function Changes(props: { before: Record<string, unknown>; after: Record<string, unknown> }) {
  const changes = changedFields(props.before, props.after, showTime);
  if (changes.length === 0) return <span class="muted">none</span>;
  return (
    <details class="changes">
      <summary>
        {changes.length} {changes.length === 1 ? 'field' : 'fields'}
      </summary>
      <dl>
        {changes.map((change) => (
          <div key={change.field}>
            <dt>{change.field}</dt>
            {/* A value changed is shown struck through, then the new one; a create's or delete's values as they are. */}
            <dd>
              {change.before !== undefined && change.after !== undefined ? (
                <>
                  <del>{change.before}</del> → <ins>{change.after}</ins>
                </>
              ) : (
                (change.after ?? change.before)
              )}
            </dd>
          </div>
        ))}
      </dl>
    </details>
  );
}
