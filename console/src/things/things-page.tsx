import { useEffect, useRef, useState } from 'preact/hooks';
import { answer, api } from '../api/client.ts';
import type { paths } from '../api/schema';
import { allows, mayRead, useAllows, useCaller } from '../caller.ts';
import { EmptyRow } from '../components/data-table.tsx';
import { EmptyState } from '../components/empty-state.tsx';
import { Failure } from '../components/failure.tsx';
import { Field, SearchField, SelectField } from '../components/field.tsx';
import { loadGroups } from '../components/group-select.tsx';
import { Pager } from '../components/pager.tsx';
import { loadTemplates } from '../components/template-select.tsx';
import { useDebounced, useLoad } from '../components/use-load.ts';
import { keyClass, showTime } from '../format.ts';
import { type Message, realtime } from '../realtime.ts';
import { choiceOf, currentQuery, keepQuery, Link, navigate, segment } from '../router.tsx';
import { ImportThings } from './import-things.tsx';
import { ThingForm } from './thing-form.tsx';

type ThingList = paths['/api/v3/things']['get']['responses'][200]['content']['application/json'];
type Thing = ThingList['things'][number];
type ThingsQuery = NonNullable<paths['/api/v3/things']['get']['parameters']['query']>;
type Options = { key: string; name: string }[];

const PER = 50;

/** The orders the list may be read in (the API's `order_by` and `order`), the first by default. */
const SORTS = [
  ['name', 'Name'],
  ['-name', 'Name, Z to A'],
  ['thing_key', 'Key'],
  ['-created_at', 'Newest first'],
  ['created_at', 'Oldest first'],
  ['-updated_at', 'Last changed first'],
] as const;
type Sort = (typeof SORTS)[number][0];

/** The things shown by whether they are alive now (the API's `alive`): all by default. */
const STATUSES = [
  ['', 'All'],
  ['online', 'Online'],
  ['offline', 'Offline'],
] as const;
type Status = (typeof STATUSES)[number][0];

/** What a refused subscription (docs/realtime.md) leaves unfollowed, by topic. */
const UNFOLLOWED: Record<string, string> = {
  things: 'Status and names are not updated as they change',
  events: 'Last event is not updated as events arrive',
};

/** Whether an event at `timestamp` is not older than the last event shown (back-filled ones are). */
const notOlder = (timestamp: unknown, shown: Thing['last_event']): boolean =>
  !shown || typeof timestamp !== 'number' || typeof shown.timestamp !== 'number' || timestamp >= shown.timestamp;

/**
 * The fleet, one server page at a time (so 10,000 things cost what 50 do), searched and filtered by
 * the API; status and last event of the things shown follow the `things` and `events` topics live.
 * The search, filters and page are kept in the query string, so that Back from a thing returns to them.
 */
export function ThingsPage() {
  const [opened] = useState(currentQuery);
  const [search, setSearch] = useState(opened.get('search') ?? '');
  const [chosenTemplate, setTemplate] = useState(opened.get('template') ?? '');
  const [chosenGroup, setGroup] = useState(opened.get('group') ?? '');
  const [sort, setSort] = useState<Sort>(() => choiceOf(SORTS, opened.get('sort')));
  const [status, setStatus] = useState<Status>(() => choiceOf(STATUSES, opened.get('status')));
  // Read by the things topic's handler, subscribed once: with a status chosen, a flip changes which
  // things the page holds.
  const statusShown = useRef(status);
  statusShown.current = status;
  const caller = useCaller();
  // A filter the role may not choose (it may not read templates or groups) is not applied, nor kept in
  // the address, either: an address naming one would otherwise narrow the list with nothing on the
  // page saying so.
  const template = mayRead(caller, 'thing_template') === false ? '' : chosenTemplate;
  const group = mayRead(caller, 'group') === false ? '' : chosenGroup;
  const [page, setPage] = useState(() => Math.max(1, Number.parseInt(opened.get('page') ?? '', 10) || 1));
  const [refused, setRefused] = useState<Record<string, string>>({});
  const mayReadData = mayRead(caller, 'data') !== false;
  const keywords = useDebounced(search.trim(), 250);
  // A new search or filter starts at its first page; the page the URL named holds for the ones it named.
  const filters = JSON.stringify([keywords, template, group, status, sort]);
  const filtersShown = useRef(filters);
  useEffect(() => {
    if (filters === filtersShown.current) return;
    filtersShown.current = filters;
    setPage(1);
  }, [filters]);
  useEffect(
    () =>
      keepQuery({
        search,
        template,
        group,
        status,
        sort: sort === 'name' ? '' : sort,
        page: page > 1 ? String(page) : '',
      }),
    [search, template, group, status, sort, page],
  );
  const list = useLoad(
    () =>
      answer(
        api.GET('/api/v3/things', {
          params: {
            query: {
              page,
              per: PER,
              order_by: sort.replace(/^-/, '') as ThingsQuery['order_by'],
              order: sort.startsWith('-') ? 'desc' : 'asc',
              ...(keywords ? { search: keywords } : {}),
              ...(template ? { thing_template_key: template } : {}),
              ...(group ? { group_key: group } : {}),
              ...(status ? { alive: status === 'online' } : {}),
            },
          },
        }),
      ),
    [page, keywords, template, group, status, sort],
    // A row's live changes (online, its last event) are kept over a read that began before them.
    { keepLive: 'apply' },
  );
  // Filtering by template or group is offered to a role that may read them, and only their lists are read.
  const mayFilterBy = {
    templates: allows(caller, 'thing_template', 'read'),
    groups: allows(caller, 'group', 'read'),
  };
  const options = useLoad(
    () => loadFilterOptions(mayFilterBy.templates, mayFilterBy.groups),
    [mayFilterBy.templates, mayFilterBy.groups],
  );
  const keys = list.data?.things.map((t) => t.thing_key).join(',') ?? '';

  /** Notes a subscription refused (or ended) by the server, and forgets it once one is accepted. */
  const follow = (topic: string, message: Message) => {
    if (message.type !== 'error' && message.type !== 'subscribed') return;
    const note = message.type === 'error' ? `${UNFOLLOWED[topic]}: ${String(message.message)}` : undefined;
    setRefused(({ [topic]: _, ...others }) => (note ? { ...others, [topic]: note } : others));
  };

  useEffect(
    () =>
      // A change made between the list's read and the subscription's acceptance, or while the connection
      // was down, is not replayed (docs/realtime.md): the list is read again on each acceptance.
      realtime.subscribe(
        'things',
        {},
        (message) => {
          follow('things', message);
          if (message.type !== 'thing') return;
          // A new, deleted or changed thing (its name, tags, template) may change which things the page
          // shows: the page is read again, once for a whole burst of changes.
          // So does a flip while the page shows online or offline things only.
          if (message.change !== 'alive' || statusShown.current !== '') return list.reloadSoon();
          const lastEvent = message.last_event as Thing['last_event'];
          list.set((data) => ({
            ...data,
            things: data.things.map((t) =>
              t.thing_key === message.thing_key
                ? {
                    ...t,
                    alive: message.alive as boolean,
                    last_event: lastEvent && notOlder(lastEvent.timestamp, t.last_event) ? lastEvent : t.last_event,
                  }
                : t,
            ),
          }));
        },
        list.reloadSoon,
      ),
    [],
  );

  useEffect(() => {
    const stopEvents =
      keys === ''
        ? undefined
        : realtime.subscribe('events', { thing_keys: keys.split(',') }, (message) => {
            follow('events', message);
            if (message.type !== 'event') return;
            list.set((data) => ({
              ...data,
              things: data.things.map((t) =>
                // A back-filled event (older than the one shown) leaves the row as it is, as the API does.
                t.thing_key === message.thing_key && notOlder(message.timestamp, t.last_event)
                  ? {
                      ...t,
                      alive: true,
                      last_event: {
                        timestamp: message.timestamp as number,
                        data: message.data as Record<string, never>,
                      },
                    }
                  : t,
              ),
            }));
          });
    return () => stopEvents?.();
  }, [keys]);

  const mayCreate = useAllows('thing', 'create');
  const mayConnect = useAllows('key_pair', 'create');
  const [panel, setPanel] = useState<'new' | 'import' | undefined>();
  // No things at all: the empty state alone. None that the search or filters match: said plainly, with no
  // table or pager of nothing.
  const noThings = list.data?.total_count === 0 && keywords === '' && template === '' && group === '' && status === '';
  const noMatch = list.data?.total_count === 0 && !noThings;
  const offers = mayCreate && panel === undefined && (
    <>
      {/* A new thing needs a template chosen; an import gives its rows the Default one (docs/api.md, "Things"). */}
      {mayFilterBy.templates && (
        <button type="button" onClick={() => setPanel('new')}>
          New thing
        </button>
      )}
      <button type="button" class="secondary" onClick={() => setPanel('import')}>
        Import things
      </button>
    </>
  );
  // With things already there, Connect a device is still where a new device begins (docs/console.md).
  const connect = mayConnect && panel === undefined && <Link to="connect">Connect a device</Link>;
  return (
    <section>
      <h1>Things</h1>
      {!noThings && (offers || connect) && (
        <div class="actions">
          {offers}
          {connect}
        </div>
      )}
      {panel === 'new' && (
        <ThingForm
          thing={undefined}
          onDone={(key) => (key ? navigate(`things/${segment(key)}`) : setPanel(undefined))}
        />
      )}
      {panel === 'import' && (
        <ImportThings
          onDone={(imported) => {
            setPanel(undefined);
            if (imported) list.reload();
          }}
        />
      )}
      {noThings && (
        <EmptyState
          title="No things yet"
          action={
            <>
              {connect}
              {offers || undefined}
            </>
          }
        >
          A thing is a device or machine that sends events. Devices register themselves with a key pair (Connect a
          device shows how); things can also be made here one by one, or imported from a CSV or JSON file.
        </EmptyState>
      )}
      {!noThings && (
        <div class="filters">
          <SearchField
            label="Search things"
            hint="keywords in the name, key, description or tags"
            value={search}
            onInput={setSearch}
          />
          {mayFilterBy.templates && (
            <Choice label="Template" value={template} onChange={setTemplate} options={options.data?.templates} />
          )}
          {mayFilterBy.groups && (
            <Choice label="Group" value={group} onChange={setGroup} options={options.data?.groups} />
          )}
          <SelectField
            label="Status"
            value={status}
            options={STATUSES}
            onChange={(value) => setStatus(choiceOf(STATUSES, value))}
          />
          <SelectField
            label="Sort by"
            value={sort}
            options={SORTS}
            onChange={(value) => setSort(choiceOf(SORTS, value))}
          />
        </div>
      )}
      <Failure message={list.error} retry={list.retry} />
      {Object.entries(refused).map(([topic, note]) =>
        // A role that may not read events is told so plainly: nothing failed.
        topic === 'events' && !mayReadData ? (
          <p key={topic} class="muted">
            Last event is as the page was read: your role may not follow events as they arrive.
          </p>
        ) : (
          <p key={topic} class="notice">
            {note}
          </p>
        ),
      )}
      {noMatch && <p role="status">No thing matches the search and filters.</p>}
      {list.data && list.data.total_count > 0 && (
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col" class="hide-narrow">
                Key
              </th>
              <th scope="col">Status</th>
              <th scope="col">Last event</th>
            </tr>
          </thead>
          <tbody>
            {list.data.things.length === 0 && <EmptyRow columns={4}>No thing on this page.</EmptyRow>}
            {list.data.things.map((thing) => (
              <tr key={thing.thing_key}>
                <td>
                  <Link to={`things/${segment(thing.thing_key)}`}>{thing.name}</Link>
                </td>
                <td class="hide-narrow">
                  <code class={keyClass(thing.thing_key)}>{thing.thing_key}</code>
                </td>
                <td class={thing.alive ? 'online' : 'offline'}>{thing.alive ? 'Online' : 'Offline'}</td>
                <td>{thing.last_event ? showTime(thing.last_event.timestamp) : <span class="muted">Never</span>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {list.data && list.data.total_count > 0 && (
        <Pager page={page} per={PER} total={list.data.total_count} noun="things" onPage={setPage} />
      )}
    </section>
  );
}

function Choice(props: { label: string; value: string; onChange: (v: string) => void; options: Options | undefined }) {
  return (
    <Field label={props.label}>
      {(id) => (
        <select id={id} value={props.value} onChange={(e) => props.onChange(e.currentTarget.value)}>
          <option value="">All</option>
          {props.options?.map((o) => (
            <option key={o.key} value={o.key}>
              {o.name}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

async function loadFilterOptions(
  withTemplates: boolean,
  withGroups: boolean,
): Promise<{ templates: Options; groups: Options }> {
  const [templates, groups] = await Promise.all([withTemplates ? loadTemplates() : [], withGroups ? loadGroups() : []]);
  return {
    templates: templates.map((t) => ({ key: t.thing_template_key, name: t.name })),
    groups: groups.map((g) => ({ key: g.group_key, name: g.name })),
  };
}
