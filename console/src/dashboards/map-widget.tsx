import 'leaflet/dist/leaflet.css';
import L, { type LayerGroup, type Map as LeafletMap } from 'leaflet';
import { useEffect, useRef } from 'preact/hooks';
import { countOf } from '../format.ts';
import type { Thing } from './model.ts';

const ONLINE = '#15803d';
const OFFLINE = '#6b7280';

/** A thing's position: its `coordinates` ([latitude, longitude], numbers or numeric text). */
function position(thing: Thing): [number, number] | undefined {
  const [lat, lng] = (thing.coordinates ?? []).map(Number);
  return lat !== undefined && lng !== undefined && Number.isFinite(lat) && Number.isFinite(lng)
    ? [lat, lng]
    : undefined;
}

/** Text as Leaflet's attribution takes it (HTML): shown as written, never as markup. */
const asHtmlText = (text: string) => {
  const element = document.createElement('span');
  element.textContent = text;
  return element.innerHTML;
};

/**
 * The tiles the server names (MAP_TILE_URL, in the page's meta elements), or none: without them the
 * markers are drawn on a plain background and nothing is fetched from elsewhere.
 */
function mapTiles(): { url: string; attribution: string } | undefined {
  const meta = (name: string) =>
    document.querySelector<HTMLMetaElement>(`meta[name="thingbase-map-tile-${name}"]`)?.content;
  const url = meta('url');
  return url ? { url, attribution: meta('attribution') ?? '' } : undefined;
}

/**
 * Things as markers coloured by status (green online, grey offline), on the server's map tiles when
 * it has a tile setting (docs/console.md, "Dashboards").
 */
export function MapWidget({ things }: { things: Thing[] }) {
  const box = useRef<HTMLDivElement>(null);
  const map = useRef<LeafletMap | undefined>(undefined);
  const layer = useRef<LayerGroup | undefined>(undefined);
  useEffect(() => {
    if (!box.current) return;
    const tiles = mapTiles();
    map.current = L.map(box.current, {
      attributionControl: tiles !== undefined,
      zoomSnap: 0.5,
      // Drawn at once: an animation still running when the widget goes away throws.
      zoomAnimation: false,
      fadeAnimation: false,
      markerZoomAnimation: false,
    }).setView([20, 0], 1);
    if (tiles) L.tileLayer(tiles.url, { attribution: asHtmlText(tiles.attribution), maxZoom: 19 }).addTo(map.current);
    layer.current = L.layerGroup().addTo(map.current);
    const resize = new ResizeObserver(() => map.current?.invalidateSize());
    resize.observe(box.current);
    return () => {
      resize.disconnect();
      map.current?.remove();
    };
  }, []);
  const placed = things.map((t) => [t, position(t)] as const).filter((p): p is [Thing, [number, number]] => !!p[1]);
  useEffect(() => {
    const group = layer.current;
    if (!group || !map.current) return;
    group.clearLayers();
    for (const [thing, at] of placed) {
      const named = `${thing.name}: ${thing.alive ? 'Online' : 'Offline'}`;
      const marker = L.circleMarker(at, {
        radius: 8,
        color: '#111827',
        weight: 1,
        fillColor: thing.alive ? ONLINE : OFFLINE,
        fillOpacity: 0.9,
      })
        // Leaflet shows text content as HTML: an element with the name as text shows it as it is.
        .bindTooltip(tooltipOf(named))
        .addTo(group);
      // The marker's shape is an image named for its thing and status, as its tooltip reads.
      const shape = marker.getElement();
      shape?.setAttribute('role', 'img');
      shape?.setAttribute('aria-label', named);
    }
    if (placed.length > 0)
      map.current.fitBounds(L.latLngBounds(placed.map(([, at]) => at)).pad(0.3), { maxZoom: 12, animate: false });
  }, [placed.map(([t, at]) => `${t.thing_key}:${t.alive}:${at}`).join('|')]);
  return (
    <figure class="dashboard-map-figure" aria-label={`Map of ${countOf(placed.length, 'thing')}`}>
      <div ref={box} class="dashboard-map" />
      <figcaption class="hint">{`With coordinates: ${placed.length} of ${countOf(things.length, 'thing')}`}</figcaption>
    </figure>
  );
}

/** A tooltip's content holding `text` as text, never as markup. */
function tooltipOf(text: string): HTMLElement {
  const content = document.createElement('span');
  content.textContent = text;
  return content;
}
