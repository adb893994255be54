/**
 * Plausible readings of a simulated machine (docs/simulator.md): a temperature that follows a slow sine
 * with noise, a counter of parts made, a state that changes now and then, and a position that moves
 * along a small circle. Each machine has its own phase, so a fleet's lines do not overlap.
 */

/** The metrics a simulated machine sends, with their units: its template's, when one is made for it. */
export const SIMULATED_METRICS = [
  { name: 'temperature', data_type: 'number', unit: '°C' },
  { name: 'humidity', data_type: 'number', unit: '%' },
  { name: 'parts', data_type: 'number', unit: 'parts' },
  { name: 'state', data_type: 'string' },
] as const;

export interface Reading {
  data: { temperature: number; parts: number; state: string; humidity: number };
  waypoint: [number, number];
}

const STATES = ['running', 'running', 'running', 'idle', 'maintenance'];

export class MachineReadings {
  private parts = 0;
  private state = 'running';

  /** `index` places the machine: its phase, base temperature and position. */
  constructor(
    private readonly index: number,
    private readonly random: () => number = Math.random,
  ) {}

  next(at: number): Reading {
    const minutes = at / 60_000;
    const phase = this.index * 0.7;
    const noise = (this.random() - 0.5) * 1.5;
    const temperature = round(60 + (this.index % 5) * 3 + 12 * Math.sin(minutes / 5 + phase) + noise, 2);
    const humidity = round(45 + 10 * Math.cos(minutes / 7 + phase) + (this.random() - 0.5) * 2, 1);
    if (this.state === 'running') this.parts += 1 + Math.floor(this.random() * 3);
    // About one reading in 40 changes the state.
    if (this.random() < 0.025) this.state = STATES[Math.floor(this.random() * STATES.length)] ?? 'running';
    const angle = minutes / 10 + phase;
    const latitude = round(48.85 + (this.index % 10) * 0.01 + 0.005 * Math.sin(angle), 6);
    const longitude = round(2.35 + Math.floor(this.index / 10) * 0.01 + 0.005 * Math.cos(angle), 6);
    return { data: { temperature, parts: this.parts, state: this.state, humidity }, waypoint: [latitude, longitude] };
  }
}

const round = (value: number, digits: number) => Number(value.toFixed(digits));
