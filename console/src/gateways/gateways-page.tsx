import { Fragment } from 'preact';
import { useState } from 'preact/hooks';
import { answer, api } from '../api/client.ts';
import { useAllows } from '../caller.ts';
import { EditDelete } from '../components/edit-delete.tsx';
import { EmptyState } from '../components/empty-state.tsx';
import { Failure } from '../components/failure.tsx';
import { Pager } from '../components/pager.tsx';
import { useLoad } from '../components/use-load.ts';
import { GatewayDetails } from './gateway-details.tsx';
import { type Gateway, GatewayForm } from './gateway-form.tsx';

const PER = 50;

/** Gateways with their adapters (docs/gateways.md): list, details with the configuration, change, delete. */
export function GatewaysPage() {
  const [page, setPage] = useState(1);
  const list = useLoad(
    () => answer(api.GET('/api/v3/gateway', { params: { query: { page, per: PER, order_by: 'name', order: 'asc' } } })),
    [page],
  );
  const mayCreate = useAllows('gateway', 'create');
  const mayUpdate = useAllows('gateway', 'update');
  const mayDelete = useAllows('gateway', 'delete');
  const [editing, setEditing] = useState<Gateway | 'new' | undefined>();
  const [shown, setShown] = useState<string | undefined>();
  const newButton = mayCreate && editing === undefined && (
    <button type="button" onClick={() => setEditing('new')}>
      New gateway
    </button>
  );
  return (
    <section>
      <h1>Gateways</h1>
      {list.data?.total_count !== 0 && newButton}
      {editing !== undefined && (
        <GatewayForm
          key={editing === 'new' ? 'new' : editing.gateway_key}
          gateway={editing === 'new' ? undefined : editing}
          onDone={(saved) => {
            setEditing(undefined);
            if (saved) list.reload();
          }}
        />
      )}
      <Failure message={list.error} />
      {list.data?.total_count === 0 && editing === undefined && (
        <EmptyState title="No gateways yet" action={newButton || undefined}>
          A gateway connects other equipment through its adapters (a Modbus line, a serial port, an MQTT bridge).
        </EmptyState>
      )}
      {list.data && list.data.total_count > 0 && (
        <>
          <table aria-label="Gateways" class="cards">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Type</th>
                <th scope="col">Version</th>
                <th scope="col">Tags</th>
                <th scope="col">Adapters</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {list.data.gateway.map((gateway) => (
                <Fragment key={gateway.gateway_key}>
                  <tr>
                    <td>{gateway.name}</td>
                    <td data-label="Type">{gateway.gateway_type ?? ''}</td>
                    <td data-label="Version">{gateway.gateway_version ?? ''}</td>
                    <td data-label="Tags">{gateway.tags}</td>
                    <td data-label="Adapters">{gateway.adapters.map((a) => a.type ?? a.adapter_pid).join(', ')}</td>
                    <td class="row-actions">
                      <button
                        type="button"
                        class="secondary"
                        aria-expanded={shown === gateway.gateway_key}
                        aria-label={`Details of ${gateway.name}`}
                        onClick={() => setShown(shown === gateway.gateway_key ? undefined : gateway.gateway_key)}
                      >
                        Details
                      </button>
                      <EditDelete
                        name={gateway.name}
                        mayUpdate={mayUpdate}
                        mayDelete={mayDelete}
                        onEdit={() => setEditing(gateway)}
                        question={
                          <>
                            The gateway <strong>{gateway.name}</strong> is deleted with its adapters.
                          </>
                        }
                        onDelete={async () => {
                          await answer(
                            api.DELETE('/api/v3/gateway/{gateway_key}', {
                              params: { path: { gateway_key: gateway.gateway_key } },
                            }),
                          );
                          list.reload();
                        }}
                      />
                    </td>
                  </tr>
                  {shown === gateway.gateway_key && (
                    <tr>
                      <td colSpan={6}>
                        <GatewayDetails gateway={gateway} />
                      </td>
                    </tr>
                  )}
                </Fragment>
              ))}
            </tbody>
          </table>
          {list.data.total_count > PER && (
            <Pager page={page} per={PER} total={list.data.total_count} noun="gateways" onPage={setPage} />
          )}
        </>
      )}
    </section>
  );
}
