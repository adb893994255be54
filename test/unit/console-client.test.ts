/**
 * The console's API types (console/src/api/schema.d.ts) are generated from the server's OpenAPI
 * document; this fails while they differ from what `npm run console:client` would write now, so that
 * a change of the API reaches the console's type check (docs/console.md, "The API client").
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { it } from 'node:test';
import { apiDocument, clientTypes } from '../../scripts/console-client-source.ts';

it('when the API changes then the checked-in console client types are regenerated with it', async () => {
  const checkedIn = readFileSync('console/src/api/schema.d.ts', 'utf8');
  const current = await clientTypes(await apiDocument());
  assert.ok(
    checkedIn === current,
    'console/src/api/schema.d.ts is not the current API: run `npm run console:client` and fix the type errors it shows',
  );
});
