/**
 * Moving and resizing a widget with the mouse (or a pen or a finger) while a dashboard is edited:
 * dragging its title moves it, dragging its corner resizes it, a grid cell at a time on the API's
 * 12-column grid, with the keyboard's rules (editor.tsx: kept on the grid, covered widgets pushed
 * down). The grid is the page's own CSS grid, so a cell's size is read from it as the drag starts.
 */
import type { Widget } from './model.ts';

type Layout = Widget['layout'];
export type Drag = 'move' | 'resize';

const COLUMNS = 12;
const MAX_HEIGHT = 100;

/** One step of the grid in pixels: a column or a row and the gap after it. */
function gridSteps(grid: HTMLElement): { x: number; y: number } {
  const style = getComputedStyle(grid);
  const columnGap = Number.parseFloat(style.columnGap) || 0;
  const rowGap = Number.parseFloat(style.rowGap) || 0;
  const column = (grid.clientWidth - columnGap * (COLUMNS - 1)) / COLUMNS;
  const row = Number.parseFloat(style.gridAutoRows) || 64;
  return { x: column + columnGap, y: row + rowGap };
}

const clamp = (value: number, low: number, high: number) => Math.min(high, Math.max(low, value));

/** The layout `start` becomes when dragged by whole cells `dx`, `dy`; resized, no shorter than `least` rows (or than it was). */
export function draggedLayout(start: Layout, drag: Drag, dx: number, dy: number, least = 1): Layout {
  if (drag === 'move') return { ...start, x: clamp(start.x + dx, 0, COLUMNS - start.w), y: Math.max(0, start.y + dy) };
  const h = clamp(start.h + dy, Math.min(least, start.h), MAX_HEIGHT);
  return { ...start, w: clamp(start.w + dx, 1, COLUMNS - start.x), h };
}

/**
 * Whether the dashboard's grid around `element` draws the layout's twelve columns: on a narrow screen
 * it stacks the widgets in one column instead (style.css), and the layout is not edited there.
 */
export function layoutDrawn(element: Element): boolean {
  const grid = element.closest<HTMLElement>('.dashboard-grid');
  return !!grid && getComputedStyle(grid).gridTemplateColumns.trim().split(/\s+/).length === COLUMNS;
}

/**
 * Follows the pointer from `event` (a pointerdown on a handle) until it is let go, calling `change`
 * each time the widget's layout moves by a cell.
 */
export function followPointer(
  event: PointerEvent,
  drag: Drag,
  start: Layout,
  least: number,
  change: (layout: Layout) => void,
) {
  const handle = event.currentTarget as HTMLElement | null;
  const grid = handle?.closest<HTMLElement>('.dashboard-grid');
  if (!handle || !grid || event.button !== 0 || !layoutDrawn(grid)) return;
  event.preventDefault();
  const steps = gridSteps(grid);
  let last = start;
  handle.setPointerCapture(event.pointerId);
  const move = (moved: PointerEvent) => {
    const dx = Math.round((moved.clientX - event.clientX) / steps.x);
    const dy = Math.round((moved.clientY - event.clientY) / steps.y);
    const next = draggedLayout(start, drag, dx, dy, least);
    if (next.x === last.x && next.y === last.y && next.w === last.w && next.h === last.h) return;
    last = next;
    change(next);
  };
  const end = () => {
    handle.removeEventListener('pointermove', move);
    handle.removeEventListener('pointerup', end);
    handle.removeEventListener('pointercancel', end);
    if (handle.hasPointerCapture(event.pointerId)) handle.releasePointerCapture(event.pointerId);
  };
  handle.addEventListener('pointermove', move);
  handle.addEventListener('pointerup', end);
  handle.addEventListener('pointercancel', end);
}
