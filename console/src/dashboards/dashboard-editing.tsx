/**
 * A dashboard while it is edited: `Add widget` (or a widget's form, opened by its `Edit widget`), the
 * variables, and `Save` (the whole dashboard, `PUT`) or `Cancel`. A refusal of Save that names a widget
 * says which, by its place and title, and offers its form with the field marked.
 */
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { answer, api, messageOf } from '../api/client.ts';
import { Failure } from '../components/failure.tsx';
import { useAction } from '../components/use-action.ts';
import { type Dashboard, type Widget, writable } from './model.ts';
import { VariablesEditor } from './variables-editor.tsx';
import { describeRefusal, firstFreeSpot, MAX_WIDGETS, type Refusal } from './widget-draft.ts';
import { WidgetForm } from './widget-form.tsx';

/** The widget form that is open: a new widget's, or an existing one's (by key); `opened` makes each opening a fresh form. */
export interface OpenForm {
  widgetKey?: string | undefined;
  refusal?: Refusal | undefined;
  opened: number;
}

/** Where the focus goes after the form closes: `Add widget`, or a widget (by key). A new object each time. */
export type FocusRequest = { target: string } | undefined;

/** A new widget's size: half the grid wide, four rows high. */
const NEW_WIDTH = 6;
const NEW_HEIGHT = 4;

export function DashboardEditing(props: {
  draft: Dashboard;
  form: OpenForm | undefined;
  setForm: (form: OpenForm | undefined) => void;
  focus: FocusRequest;
  setFocus: (focus: FocusRequest) => void;
  change: (update: (d: Dashboard) => Dashboard) => void;
  onSaved: (saved: Dashboard) => void;
  onCancel: () => void;
}) {
  const { draft, form } = props;
  const save = useAction();
  const [refusal, setRefusal] = useState<Refusal | undefined>();
  const addButton = useRef<HTMLButtonElement>(null);
  const fullId = useId();
  useEffect(() => {
    if (props.focus?.target === 'add') addButton.current?.focus();
  }, [props.focus]);
  const edited = form?.widgetKey === undefined ? -1 : draft.widgets.findIndex((w) => w.widget_key === form.widgetKey);
  const variables = draft.variables.map((v) => v.name);
  const forgetRefusal = () => {
    save.clear();
    setRefusal(undefined);
  };
  const full = draft.widgets.length >= MAX_WIDGETS;
  return (
    <div class="panel dashboard-editing">
      <p class="layout-elsewhere hint">
        The layout is edited on a wider screen; here the widgets are shown one below the other.
      </p>
      {form ? (
        <WidgetForm
          key={form.opened}
          widget={draft.widgets[edited]}
          position={edited + 1}
          variables={variables}
          refusal={form.refusal}
          onDone={(fields) => {
            const existing = draft.widgets[edited];
            const widget_key = existing?.widget_key ?? newKey(draft.widgets);
            props.change((d) => ({
              ...d,
              widgets: existing
                ? d.widgets.map((w) =>
                    w.widget_key === widget_key ? ({ ...fields, widget_key, layout: w.layout } as Widget) : w,
                  )
                : [
                    ...d.widgets,
                    { ...fields, widget_key, layout: firstFreeSpot(d.widgets, NEW_WIDTH, NEW_HEIGHT) } as Widget,
                  ],
            }));
            props.setForm(undefined);
            props.setFocus({ target: widget_key });
          }}
          onCancel={() => {
            props.setForm(undefined);
            props.setFocus({ target: form.widgetKey ?? 'add' });
          }}
        />
      ) : (
        <div class="actions">
          <button
            ref={addButton}
            type="button"
            disabled={full}
            aria-describedby={full ? fullId : undefined}
            onClick={() => props.setForm({ opened: Date.now() })}
          >
            Add widget
          </button>
          {full && (
            <small id={fullId} class="hint">
              A dashboard holds at most {MAX_WIDGETS} widgets: remove one to add another.
            </small>
          )}
        </div>
      )}
      <VariablesEditor
        variables={draft.variables}
        onChange={(next) => {
          // A refusal of the names before is answered by the change.
          forgetRefusal();
          props.change((d) => ({ ...d, variables: next }));
        }}
      />
      <div class="actions">
        <button
          type="button"
          disabled={save.busy}
          onClick={async () => {
            const sent = draft;
            setRefusal(undefined);
            let saved: Dashboard | undefined;
            const done = await save.run(async () => {
              try {
                saved = (
                  await answer(
                    api.PUT('/api/v3/dashboards/{dashboard_key}', {
                      params: { path: { dashboard_key: sent.dashboard_key } },
                      body: { dashboard: writable(sent, true) } as never,
                    }),
                  )
                ).dashboard;
              } catch (failure) {
                setRefusal(describeRefusal(messageOf(failure), sent.widgets));
                throw failure;
              }
            });
            if (done && saved) props.onSaved(saved);
          }}
        >
          Save
        </button>
        <button
          type="button"
          class="secondary"
          onClick={() => {
            forgetRefusal();
            props.onCancel();
          }}
        >
          Cancel
        </button>
      </div>
      {save.error && refusal ? (
        <SaveRefusal
          refusal={refusal}
          widget={draft.widgets.find((w) => w.widget_key === refusal.widgetKey)}
          onEdit={(widgetKey) => props.setForm({ widgetKey, refusal, opened: Date.now() })}
        />
      ) : (
        <Failure message={save.error} />
      )}
    </div>
  );
}

/** Save's refusal, said of the widget it names, with a button to that widget's form. */
function SaveRefusal(props: { refusal: Refusal; widget: Widget | undefined; onEdit: (widgetKey: string) => void }) {
  const { widget } = props;
  return (
    <p role="alert" class="error">
      {props.refusal.message}
      {widget && (
        <>
          {' '}
          <button type="button" class="secondary" onClick={() => props.onEdit(widget.widget_key)}>
            Edit “{widget.title}”
          </button>
        </>
      )}
    </p>
  );
}

/** A key for a new widget, as the API would make one (10 characters of 0-9a-z, unique in the dashboard). */
function newKey(widgets: Widget[]): string {
  const taken = new Set(widgets.map((w) => w.widget_key));
  for (;;) {
    const bytes = crypto.getRandomValues(new Uint8Array(10));
    const key = Array.from(bytes, (b) => (b % 36).toString(36)).join('');
    if (!taken.has(key)) return key;
  }
}
