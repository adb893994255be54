/**
 * A stop made of named steps (docs/deployment.md, "Stopping"), each waited for at most its bound: a
 * database or broker that hangs must not hold a stop for ever. A step past its bound is logged by name
 * and left to end by itself; the stop goes on with the next.
 */
import { LATE, waitAtMost } from './wait.ts';

export class StopSteps {
  private readonly underWay = new Set<string>();

  constructor(private readonly warn: (message: string) => void) {}

  /** The steps begun and not yet finished nor given up on: what a stop past its deadline waits for. */
  get pending(): string[] {
    return [...this.underWay];
  }

  /** Runs one step, waiting at most `ms` for it. */
  step(name: string, work: () => unknown, ms: number): Promise<void> {
    return this.steps({ [name]: work }, ms);
  }

  /** Runs steps that do not depend on each other together, waiting at most `ms` for them. */
  async steps(steps: Record<string, () => unknown>, ms: number): Promise<void> {
    await Promise.all(
      Object.entries(steps).map(async ([name, work]) => {
        this.underWay.add(name);
        try {
          const outcome = await waitAtMost(Promise.resolve().then(work), ms);
          if (outcome === LATE) {
            this.warn(`stopping: ${name} did not finish within ${ms / 1000} s; the stop goes on without it`);
          }
        } catch (error) {
          this.warn(`stopping: ${name} failed (${(error as Error).message}); the stop goes on`);
        } finally {
          this.underWay.delete(name);
        }
      }),
    );
  }
}
