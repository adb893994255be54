/**
 * Editing a dashboard's layout: each widget's place changed with buttons (`Move left`, `Wider`...) that
 * work from the keyboard, on the API's 12-column grid; beside them, `Edit widget` and `Remove`.
 */
import type { Widget } from './model.ts';

const COLUMNS = 12;

type Layout = Widget['layout'];

/**
 * The fewest rows a widget of `type` takes when resized on the grid: a time series keeps room for a
 * plot with its y axis labelled beside a legend of one line (use-chart-fit.ts); others, one row.
 */
export function leastHeight(type: Widget['type']): number {
  return type === 'timeseries' ? 3 : 1;
}

/** The layout steps the buttons take, each kept on the grid, no shorter than `least` rows (or than it is). */
/**
 * A widget's layout steps: each button is named in words (`Move left`) and shows a sign under the
 * word of its group (Move, Width, Height), so that the eight fit on one line above the widget's
 * content rather than taking a third of a small widget while it is edited.
 */
const STEPS: { label: string; sign: string; group: string; step: (l: Layout, least: number) => Layout }[] = [
  { label: 'Move left', sign: '←', group: 'Move', step: (l) => ({ ...l, x: Math.max(0, l.x - 1) }) },
  { label: 'Move right', sign: '→', group: 'Move', step: (l) => ({ ...l, x: Math.min(COLUMNS - l.w, l.x + 1) }) },
  { label: 'Move up', sign: '↑', group: 'Move', step: (l) => ({ ...l, y: Math.max(0, l.y - 1) }) },
  { label: 'Move down', sign: '↓', group: 'Move', step: (l) => ({ ...l, y: l.y + 1 }) },
  { label: 'Narrower', sign: '−', group: 'Width', step: (l) => ({ ...l, w: Math.max(1, l.w - 1) }) },
  { label: 'Wider', sign: '+', group: 'Width', step: (l) => ({ ...l, w: Math.min(COLUMNS - l.x, l.w + 1) }) },
  {
    label: 'Shorter',
    sign: '−',
    group: 'Height',
    step: (l, least) => ({ ...l, h: Math.max(Math.min(least, l.h), l.h - 1) }),
  },
  { label: 'Taller', sign: '+', group: 'Height', step: (l) => ({ ...l, h: Math.min(100, l.h + 1) }) },
];
const STEP_GROUPS = [...new Set(STEPS.map((s) => s.group))];

const overlap = (a: Layout, b: Layout): boolean =>
  a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;

/**
 * The widgets with widget `moved` given `layout`, any widget it now covers pushed down below it (and
 * so on), so that a step from the keyboard never leaves two widgets on the same cells.
 */
export function place(widgets: Widget[], moved: number, layout: Layout): Widget[] {
  const placed = widgets.map((w, i) => ({ ...w, layout: i === moved ? layout : { ...w.layout } }));
  const queue = [moved];
  for (let steps = 0; queue.length > 0 && steps < 10_000; steps++) {
    const pusher = placed[queue.shift() as number]?.layout;
    if (!pusher) continue;
    placed.forEach((w, i) => {
      if (w.layout === pusher || !overlap(pusher, w.layout)) return;
      w.layout.y = pusher.y + pusher.h;
      queue.push(i);
    });
  }
  return placed;
}

const ARROWS: Record<string, [string, string]> = {
  ArrowLeft: ['Move left', 'Narrower'],
  ArrowRight: ['Move right', 'Wider'],
  ArrowUp: ['Move up', 'Shorter'],
  ArrowDown: ['Move down', 'Taller'],
};

/** The step an arrow key takes on a focused widget: a move, or with Shift a resize. */
export function arrowStep(key: string, shift: boolean): ((l: Layout, least: number) => Layout) | undefined {
  const names = ARROWS[key];
  if (!names) return undefined;
  return STEPS.find((s) => s.label === names[shift ? 1 : 0])?.step;
}

/** A widget's buttons while the dashboard is edited: its settings and removal, shown on a phone too. */
export function WidgetActions(props: { edit: () => void; remove: () => void }) {
  return (
    <div class="widget-actions">
      <button type="button" class="secondary" onClick={props.edit}>
        Edit widget
      </button>
      <button type="button" class="danger" onClick={props.remove}>
        Remove
      </button>
    </div>
  );
}

/** The layout's buttons, and the place in words; not drawn where the grid is not (a phone). */
export function LayoutControls(props: { widget: Widget; change: (widget: Widget) => void }) {
  const { widget } = props;
  const { x, y, w, h } = widget.layout;
  return (
    <fieldset class="layout-controls" aria-label={`Layout of ${widget.title}`}>
      {STEP_GROUPS.map((group) => (
        <span key={group} class="layout-steps">
          <span class="muted">{group}</span>
          {STEPS.filter((s) => s.group === group).map(({ label, sign, step }) => (
            <button
              key={label}
              type="button"
              class="secondary"
              aria-label={label}
              title={label}
              onClick={() => props.change({ ...widget, layout: step(widget.layout, leastHeight(widget.type)) })}
            >
              {sign}
            </button>
          ))}
        </span>
      ))}
      <small class="hint">
        Column {x + 1}, row {y + 1}, {w} wide, {h} high
      </small>
    </fieldset>
  );
}
