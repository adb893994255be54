/**
 * `npm run console:client`: writes the console's typed API client types (console/src/api/schema.d.ts)
 * from the OpenAPI document of the server in this checkout, with openapi-typescript. A test
 * (test/unit/console-client.test.ts) fails while the file differs from what this would write now, so a
 * change of the API shows up in the console's type check (docs/console.md, "The API client").
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { apiDocument, clientTypes } from './console-client-source.ts';

const target = fileURLToPath(new URL('../console/src/api/schema.d.ts', import.meta.url));
writeFileSync(target, await clientTypes(await apiDocument()));
console.log(`wrote ${target}`);
