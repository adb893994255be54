/**
 * Tags, as things, groups and gateways keep them: given as an array or one comma-joined string,
 * stored as an array, answered comma-joined. Array items are split on commas too, since a comma
 * inside a tag would not survive the comma-joined answer; tags are trimmed, empty ones dropped, and
 * each kept once.
 */
export function normaliseTags(tags: string | string[] | undefined): string[] {
  if (tags === undefined) return [];
  const items = (Array.isArray(tags) ? tags : [tags]).flatMap((t) => t.split(','));
  return [...new Set(items.map((t) => t.trim()).filter((t) => t !== ''))];
}

/** Stored tags (a JSON array) as a list. */
export const storedTags = (row: { tags: string }): string[] => JSON.parse(row.tags) as string[];
