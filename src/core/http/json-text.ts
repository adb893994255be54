/**
 * An answer a handler has already written as JSON text (a large aggregation, say): the route wrapper
 * sends it as it is instead of serialising an object.
 */
export class JsonText {
  constructor(readonly text: string) {}
}
