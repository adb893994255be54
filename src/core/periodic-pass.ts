/**
 * Background work done in passes (the retention sweeper, the event compactor): a pass every interval,
 * one at a time (a pass asked during another joins it), and a stop that waits for the pass under way,
 * which checks `stopped` between its steps to leave the rest undone.
 */
export class PeriodicPass<T> {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<T> | undefined;
  private stoppedNow = false;

  constructor(private readonly pass: () => Promise<T>) {}

  /** Whether the work was stopped: a pass under way ends at its next step. */
  get stopped(): boolean {
    return this.stoppedNow;
  }

  /** A pass every `intervalMs`, the first one interval after the start; a failed pass is told to `onError` and the next tries again. */
  start(intervalMs: number, onError: (error: unknown) => void): void {
    const next = () => {
      this.timer = undefined;
      void this.run()
        .catch(onError)
        .finally(() => {
          if (!this.stoppedNow) this.timer = setTimeout(next, intervalMs).unref();
        });
    };
    this.timer = setTimeout(next, intervalMs).unref();
  }

  /** Stops the passes; waits for the step under way of the pass under way. */
  async stop(): Promise<void> {
    this.stoppedNow = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running?.catch(() => undefined);
  }

  /** One pass now, or the one under way. */
  run(): Promise<T> {
    this.running ??= this.pass().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }
}
