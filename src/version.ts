/**
 * The server's version: package.json's, as `thingbase --version` and the OpenAPI document report it.
 * package.json sits one folder above this module both in src/ and in the compiled dist/.
 */
import { readFileSync } from 'node:fs';

export const VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
