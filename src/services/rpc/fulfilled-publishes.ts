/**
 * @module `FulfilledPublishes`: skips the rejection handler of a publish whose promise is known to have
 * fulfilled. A bus may answer every publish with one shared, already resolved promise (`NatsBus` does);
 * a handler attached to it anyway would cost a reaction job, a derived promise and usually a closure on
 * every message, for a promise that can never reject.
 */

/** Remembers one promise a bus handed back more than once and that was then seen fulfilled. */
export class FulfilledPublishes {
  #last: Promise<void> | undefined;
  #probed: Promise<void> | undefined;
  #fulfilled: Promise<void> | undefined;

  /**
   * True when `sent` has fulfilled already (so it cannot reject and needs no handler); false when the
   * caller must handle its rejection as usual. A bus that returns a new promise per publish costs one
   * comparison here.
   */
  known(sent: Promise<void>): boolean {
    if (sent === this.#fulfilled) return true;
    // The same promise twice in a row: find out, once, whether it fulfilled.
    if (sent === this.#last && sent !== this.#probed) {
      this.#probed = sent;
      sent.then(
        () => {
          this.#fulfilled = sent;
        },
        () => undefined,
      );
    }
    this.#last = sent;
    return false;
  }
}
