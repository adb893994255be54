import { useState } from 'preact/hooks';
import { answer, api } from '../api/client.ts';
import type { paths } from '../api/schema';
import { Failure } from '../components/failure.tsx';
import { Field } from '../components/field.tsx';
import { FormButtons } from '../components/form-buttons.tsx';
import { useSubmit } from '../components/use-submit.ts';
import { countOf } from '../format.ts';

type ImportAnswer = paths['/api/v3/things/import']['post']['responses'][200]['content']['application/json'];

/**
 * Sends a file to `POST /api/v3/things/import` as it is (docs/api.md, "Importing things"): a JSON file
 * (`{"things": [...]}` or an array) as JSON, anything else as CSV. `Dry run` checks every row and writes
 * nothing. The rows that failed are listed with the API's own errors.
 */
async function importFile(file: File, dryRun: boolean): Promise<ImportAnswer> {
  const text = await file.text();
  if (file.name.toLowerCase().endsWith('.json') || /^\s*[[{]/.test(text)) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new Error(`${file.name} is not valid JSON: a JSON file holds {"things": [...]}.`);
    }
    const things = Array.isArray(parsed) ? parsed : (parsed as { things?: unknown[] }).things;
    return answer(api.POST('/api/v3/things/import', { body: { things, dry_run: dryRun } }));
  }
  // A CSV body travels as it is; the options go in the query string, which the API reads beside it.
  return answer(
    api.POST('/api/v3/things/import', {
      body: text as never,
      bodySerializer: (body: unknown) => body as string,
      headers: { 'content-type': 'text/csv' },
      params: { query: { dry_run: dryRun } as never },
    }),
  );
}

export function ImportThings({ onDone }: { onDone: (imported: boolean) => void }) {
  const [file, setFile] = useState<File | undefined>();
  const [dryRun, setDryRun] = useState(true);
  const [result, setResult] = useState<{ answer: ImportAnswer; dryRun: boolean } | undefined>();
  const submit = useSubmit(async () => {
    if (!file) throw new Error('Choose a CSV or JSON file first.');
    setResult(undefined);
    setResult({ answer: await importFile(file, dryRun), dryRun });
  });
  return (
    <form onSubmit={submit.onSubmit} class="panel" aria-label="Import things">
      <h2>Import things</h2>
      <Field
        label="File"
        hint="CSV with a header row (thing_key, name, description, tags, thing_template_key, bi_directional, user_defined_properties.<name>), or JSON {&quot;things&quot;: [...]}"
      >
        {(id, describedBy) => (
          <input
            id={id}
            type="file"
            accept=".csv,.json,text/csv,application/json"
            aria-describedby={describedBy}
            onChange={(e) => setFile(e.currentTarget.files?.[0])}
          />
        )}
      </Field>
      <label class="check">
        <input type="checkbox" checked={dryRun} onChange={(e) => setDryRun(e.currentTarget.checked)} /> Dry run
      </label>
      <Failure message={submit.error} />
      {result && <ImportResult answer={result.answer} dryRun={result.dryRun} />}
      <FormButtons
        busy={submit.busy}
        submitLabel="Import"
        onCancel={() => onDone(result !== undefined && !result.dryRun)}
      />
    </form>
  );
}

function ImportResult({ answer: result, dryRun }: { answer: ImportAnswer; dryRun: boolean }) {
  return (
    <section aria-label="Import result" role="status">
      <p>
        {dryRun ? 'Dry run: would create' : 'Created'} {result.created}, {dryRun ? 'would update' : 'updated'}{' '}
        {result.updated}; {countOf(result.failed.length, 'row')} failed.
      </p>
      {result.failed.length > 0 && (
        <table aria-label="Rows that failed" class="cards">
          <thead>
            <tr>
              <th scope="col">Row</th>
              <th scope="col">Field</th>
              <th scope="col">Code</th>
              <th scope="col">Message</th>
            </tr>
          </thead>
          <tbody>
            {result.failed.flatMap((row) =>
              row.errors.map((error, i) => (
                <tr key={`${row.row}-${i}`}>
                  <td>{row.row}</td>
                  <td data-label="Field">
                    <code>{error.param}</code>
                  </td>
                  <td data-label="Code">{error.code}</td>
                  <td data-label="Message">{error.message}</td>
                </tr>
              )),
            )}
          </tbody>
        </table>
      )}
    </section>
  );
}
