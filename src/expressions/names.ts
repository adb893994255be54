/**
 * The names an expression refers to, so each context (group expressions, rule conditions) can refuse
 * names it does not offer before the expression is stored.
 */
import { childrenOf, type Expression, type NameNode } from './ast.ts';
import { ExpressionNameError } from './errors.ts';
import { isIdentifier, keywordOf } from './lexer.ts';
import { formatString } from './strings.ts';

/** Every name node, in source order, duplicates included. */
export function nameNodes(expr: Expression): NameNode[] {
  const found: NameNode[] = [];
  const visit = (node: Expression): void => {
    if (node.kind === 'name') found.push(node);
    for (const child of childrenOf(node)) visit(child);
  };
  visit(expr);
  return found;
}

/** Each distinct dotted name as its segments, in order of first appearance. */
export function referencedNames(expr: Expression): string[][] {
  const seen = new Set<string>();
  const names: string[][] = [];
  for (const node of nameNodes(expr)) {
    const key = JSON.stringify(node.path);
    if (seen.has(key)) continue;
    seen.add(key);
    names.push([...node.path]);
  }
  return names;
}

/** The first name (in source order) that `isAllowed` refuses, if any. */
export function findUnknownName(
  expr: Expression,
  isAllowed: (path: readonly string[]) => boolean,
): NameNode | undefined {
  return nameNodes(expr).find((node) => !isAllowed(node.path));
}

/**
 * Throws ExpressionNameError for the first name `isAllowed` refuses: `unknown name 'x' at position 4`,
 * followed by `hint` in parentheses when given (for instance the list of names the context offers).
 */
export function validateNames(expr: Expression, isAllowed: (path: readonly string[]) => boolean, hint?: string): void {
  const unknown = findUnknownName(expr, isAllowed);
  if (!unknown) return;
  const message = `unknown name '${formatName(unknown.path)}' at position ${unknown.position}${hint ? ` (${hint})` : ''}`;
  throw new ExpressionNameError(message, unknown.path, unknown.position);
}

/** Writes a name as it can be typed: segments that are not plain identifiers come out quoted. */
export function formatName(path: readonly string[]): string {
  return path
    .map((segment, index) => {
      const plain = isIdentifier(segment) && (index > 0 || keywordOf(segment) === undefined);
      return plain ? segment : formatString(segment);
    })
    .join('.');
}
