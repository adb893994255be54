import { useState } from 'preact/hooks';
import { answer, api } from '../api/client.ts';
import { useAllows } from '../caller.ts';
import { Failure } from '../components/failure.tsx';
import { Pager } from '../components/pager.tsx';
import { useLoad } from '../components/use-load.ts';
import { Link, segment } from '../router.tsx';

const PER = 20;

/** One page of a group's members, as `GET /api/v3/groups/:group_key/things` answers them. */
export function loadMembers(groupKey: string, page: number, per: number) {
  return answer(
    api.GET('/api/v3/groups/{group_key}/things', {
      params: { path: { group_key: groupKey }, query: { page, per, order_by: 'name', order: 'asc' } },
    }),
  );
}

/**
 * How many things each listed group holds (a dynamic group's expression evaluated now), in one request
 * for the page rather than one per row (docs/api.md, "Groups").
 */
export function useMemberCounts(groups: { group_key: string }[] | undefined) {
  // Each load of the list (a group saved or deleted) counts anew.
  return useLoad(async () => {
    if (groups === undefined || groups.length === 0) return {};
    const groupKeys = groups.map((group) => group.group_key).join(',');
    return (await answer(api.GET('/api/v3/group_member_counts', { params: { query: { group_keys: groupKeys } } })))
      .member_counts;
  }, [groups]);
}

/** A group's members, a page at a time, each leading to its thing's page. */
export function GroupMembers({ groupKey, name }: { groupKey: string; name: string }) {
  const [page, setPage] = useState(1);
  const members = useLoad(() => loadMembers(groupKey, page, PER), [groupKey, page]);
  // Group read lists the members; their pages are for a role that may read things.
  const mayOpen = useAllows('thing', 'read');
  return (
    <section aria-label={`Members of ${name}`}>
      <Failure message={members.error} />
      {members.data?.total_count === 0 && <p>No things in this group.</p>}
      {members.data && members.data.total_count > 0 && (
        <>
          <ul class="members">
            {members.data.things.map((thing) => (
              <li key={thing.thing_key}>
                {mayOpen ? (
                  <Link to={`things/${segment(thing.thing_key)}`}>{thing.name}</Link>
                ) : (
                  <span>{thing.name}</span>
                )}{' '}
                <code>{thing.thing_key}</code>
              </li>
            ))}
          </ul>
          {members.data.total_count > PER && (
            <Pager page={page} per={PER} total={members.data.total_count} noun="things" onPage={setPage} />
          )}
        </>
      )}
    </section>
  );
}
