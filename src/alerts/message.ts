/**
 * Alert messages filled in from an event and its thing (docs/rules.md, "How rules are evaluated",
 * Alert): rules' alert messages and SMS actions' message templates.
 */
import { readPath } from '../expressions/index.ts';

/** `{{metric}}`, `{{nested.metric}}` and `{{thing.<field>}}` replaced; unknown names become empty. */
export function renderAlertMessage(template: string, data: unknown, thing: object): string {
  return template.replace(/\{\{\s*([A-Za-z0-9_.$-]+)\s*\}\}/g, (_, name: string) => {
    const path = name.split('.');
    const value = path[0] === 'thing' ? readPath(thing, path.slice(1)) : readPath(data, path);
    if (value === undefined || value === null) return '';
    return typeof value === 'object' ? JSON.stringify(value) : String(value);
  });
}
