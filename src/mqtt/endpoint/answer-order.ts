/**
 * A connection's answers in the order of its messages (docs/devices.md, "MQTT"): a message whose
 * things had to be read from the store, or whose key pair was looked up, may be done after the ones
 * read behind it; its answer still leaves first, and theirs wait for it. Each message read gets its
 * number; an answer ready before its turn is kept (a few, at most the messages a connection has
 * taken and not answered) until those before it have left.
 */
import type { Ack } from '../signed-messages.ts';

/** Numbers a connection's messages as they are read and lets their answers out in that order. */
export class AnswerOrder {
  private read = 0;
  private answered = 0;
  private early: Map<number, Ack | null> | undefined;

  /** The number of the message just read. */
  next(): number {
    return this.read++;
  }

  /** Sends the answer of message `number` now, when every one before it has left, else once they have. */
  answer(number: number, ack: Ack, to: { answer(ack: Ack): void }): void {
    if (number !== this.answered) {
      this.keep(number, ack);
      return;
    }
    to.answer(ack);
    this.answered++;
    this.sendDue(to);
  }

  /**
   * Sends the answer of message `number` now, before those of messages read earlier if they have not
   * left yet: a refusal for overload is answered as it is read (docs/devices.md, "Overload").
   */
  answerAtOnce(number: number, ack: Ack, to: { answer(ack: Ack): void }): void {
    to.answer(ack);
    if (number !== this.answered) {
      this.keep(number, null);
      return;
    }
    this.answered++;
    this.sendDue(to);
  }

  /** Keeps the answer of message `number` until its turn (null: sent at once, its turn only to pass). */
  private keep(number: number, ack: Ack | null): void {
    this.early ??= new Map();
    this.early.set(number, ack);
  }

  /** Sends the answers kept that are due now: those of the next messages, each in turn. */
  private sendDue(to: { answer(ack: Ack): void }): void {
    const early = this.early;
    if (early === undefined) return;
    for (let next = early.get(this.answered); next !== undefined; next = early.get(this.answered)) {
      early.delete(this.answered);
      // null: answered at once, already sent.
      if (next !== null) to.answer(next);
      this.answered++;
    }
    if (early.size === 0) this.early = undefined;
  }
}
