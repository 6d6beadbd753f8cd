/**
 * Runs `work` one at a time: a wake while it runs asks for exactly one more run after it, however many wakes came.
 * Subscribers use it so timers, commit hooks and notifications never start overlapping passes.
 */
export class CoalescedRun {
  private current: Promise<void> | undefined;
  private again = false;

  private readonly work: () => Promise<void>;
  private readonly onError: (error: unknown) => void;
  constructor(work: () => Promise<void>, onError: (error: unknown) => void) {
    this.work = work;
    this.onError = onError;
  }

  wake(): void {
    if (this.current) {
      this.again = true;
      return;
    }
    this.current = this.work()
      .catch(this.onError)
      .finally(() => {
        this.current = undefined;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  /** Resolves when the pass under way (if any) has finished. */
  async settled(): Promise<void> {
    while (this.current) await this.current;
  }
}
