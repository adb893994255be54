/**
 * Comments and docs cite the repository's own documents: `docs/<name>.md`, optionally with the section
 * (`docs/api.md, "Lists"`), and markdown links between the docs. Readers of the project have those and
 * nothing else, so a citation of any other document, or of a doc or section that does not exist, fails.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';

// The suite runs from the repository's root (compiled, this file is not in the repository's tree).
const root = process.cwd();
const THIS_FILE = 'test/unit/repository-documents.test.ts';

/** Documents outside the repository that earlier comments cited; this file names them to look for them. */
const FOREIGN_DOCUMENTS = ['CONTRACT', 'DEVICES.md'];

const SOURCE_FOLDERS = ['src', 'console/src', 'test', 'bench', 'scripts'];
const TEXT_FILE = /\.(ts|tsx|mts|mjs|js|json|md|css)$/;

function filesUnder(folder: string): string[] {
  const absolute = join(root, folder);
  if (!existsSync(absolute)) return [];
  return readdirSync(absolute, { recursive: true })
    .map((name) => join(folder, String(name)))
    .filter((path) => TEXT_FILE.test(path));
}

const sourceFiles = SOURCE_FOLDERS.flatMap(filesUnder);
const markdownFiles = [...filesUnder('docs'), 'README.md', 'CHANGELOG.md'].filter((path) => path.endsWith('.md'));
const read = (path: string) => readFileSync(join(root, path), 'utf8');

/** Text with comment line breaks (`\n * `, `\n // `) and other line breaks turned into spaces. */
const joinLines = (text: string) => text.replace(/\s*\n\s*(?:\*(?!\/)|\/\/)?\s*/g, ' ');

const withoutCodeBlocks = (markdown: string) => markdown.replace(/^```[\s\S]*?^```/gm, '');

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
const slugOf = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

interface Headings {
  texts: string[];
  anchors: Set<string>;
}

const headingsByDoc = new Map<string, Headings>();
function headingsOf(path: string): Headings {
  let found = headingsByDoc.get(path);
  if (!found) {
    const texts = [...withoutCodeBlocks(read(path)).matchAll(/^#{1,6}\s+(.+?)\s*$/gm)].map((m) => m[1] as string);
    const anchors = new Set<string>();
    const seen = new Map<string, number>();
    for (const text of texts) {
      const slug = slugOf(text);
      const count = seen.get(slug) ?? 0;
      anchors.add(count === 0 ? slug : `${slug}-${count}`);
      seen.set(slug, count + 1);
    }
    found = { texts: texts.map((t) => t.replaceAll('`', '')), anchors };
    headingsByDoc.set(path, found);
  }
  return found;
}

/** Every `docs/<name>.md` cited in a text, with the sections quoted after it (`, "A"` or `, "A" and "B"`). */
function citations(text: string): { doc: string; sections: string[] }[] {
  return [...joinLines(text).matchAll(/\bdocs\/([\w.-]+\.md)((?:,\s*"[^"]+")(?:\s+and\s+"[^"]+")*)?/g)].map((m) => ({
    doc: `docs/${m[1]}`,
    sections: [...(m[2] ?? '').matchAll(/"([^"]+)"/g)].map((s) => s[1] as string),
  }));
}

/** What is wrong with one citation, or undefined. A section names a heading, or the start of one. */
function citationProblem(doc: string, sections: string[]): string | undefined {
  if (!existsSync(join(root, doc))) return `${doc} does not exist`;
  const { texts } = headingsOf(doc);
  const missing = sections.filter((section) => !texts.some((heading) => heading.startsWith(section)));
  return missing.length > 0 ? `${doc} has no section ${missing.map((s) => `"${s}"`).join(', ')}` : undefined;
}

describe('repository documents', () => {
  it('when a file is searched for documents outside the repository then none is named', () => {
    const offenders: string[] = [];
    for (const path of [...sourceFiles, ...markdownFiles]) {
      if (path === THIS_FILE) continue;
      const text = read(path);
      for (const name of FOREIGN_DOCUMENTS) {
        if (text.includes(name)) offenders.push(`${path} names ${name}`);
      }
    }
    assert.deepEqual(offenders, []);
  });

  it('when a comment cites docs/<name>.md and its sections then they exist', () => {
    const problems: string[] = [];
    let cited = 0;
    for (const path of sourceFiles) {
      for (const { doc, sections } of citations(read(path))) {
        cited++;
        const problem = citationProblem(doc, sections);
        if (problem) problems.push(`${path}: ${problem}`);
      }
    }
    assert.deepEqual(problems, []);
    assert.ok(cited > 50, `only ${cited} citations found: is the search still reading comments?`);
  });

  it('when the docs cite or link each other then the documents and sections exist', () => {
    const problems: string[] = [];
    for (const path of markdownFiles) {
      const text = withoutCodeBlocks(read(path));
      for (const { doc, sections } of citations(text)) {
        const problem = citationProblem(doc, sections);
        if (problem) problems.push(`${path}: ${problem}`);
      }
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target as string)) continue;
        const [file, anchor] = (target as string).split('#') as [string, string | undefined];
        const linked = file === '' ? path : relative(root, join(root, path, '..', file));
        if (!existsSync(join(root, linked))) {
          problems.push(`${path}: link to ${target}: ${linked} does not exist`);
        } else if (anchor !== undefined && linked.endsWith('.md') && !headingsOf(linked).anchors.has(anchor)) {
          problems.push(`${path}: link to ${target}: ${linked} has no heading #${anchor}`);
        }
      }
    }
    assert.deepEqual(problems, []);
  });
});
