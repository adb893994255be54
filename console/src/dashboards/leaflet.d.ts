/** The few parts of Leaflet 1.9 the map widget uses (the package ships no types). */
declare module 'leaflet' {
  type LatLng = [number, number];
  interface Layer {
    addTo(target: Map | LayerGroup): this;
    bindTooltip(content: string | HTMLElement): this;
  }
  interface Path extends Layer {
    /** The marker's SVG shape, once it is on a map. */
    getElement(): Element | undefined;
  }
  interface LayerGroup extends Layer {
    clearLayers(): this;
  }
  interface LatLngBounds {
    pad(ratio: number): LatLngBounds;
  }
  interface Map {
    setView(center: LatLng, zoom: number): this;
    fitBounds(bounds: LatLngBounds, options?: { maxZoom?: number; animate?: boolean }): this;
    invalidateSize(): this;
    remove(): this;
  }
  interface CircleMarkerOptions {
    radius?: number;
    color?: string;
    weight?: number;
    fillColor?: string;
    fillOpacity?: number;
  }
  const L: {
    map(
      element: HTMLElement,
      options?: {
        attributionControl?: boolean;
        zoomSnap?: number;
        zoomAnimation?: boolean;
        fadeAnimation?: boolean;
        markerZoomAnimation?: boolean;
      },
    ): Map;
    layerGroup(): LayerGroup;
    tileLayer(url: string, options?: { attribution?: string; maxZoom?: number }): Layer;
    circleMarker(at: LatLng, options?: CircleMarkerOptions): Path;
    latLngBounds(points: LatLng[]): LatLngBounds;
  };
  export default L;
  export type { LayerGroup, Map };
}
