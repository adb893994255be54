import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  compileExpression,
  compileMatcher,
  type Expression,
  ExpressionError,
  ExpressionNameError,
  ExpressionSyntaxError,
  evaluateExpression,
  formatExpression,
  isRuleConditionName,
  isThingFieldName,
  MAX_EXPRESSION_LENGTH,
  matchesExpression,
  type NameLookup,
  parseExpression,
  parseRuleCondition,
  parseThingExpression,
  readPath,
  referencedNames,
  ruleConditionLookup,
  thingLookup,
  validateNames,
  valuesEqual,
} from '../../src/expressions/index.ts';

/** The tree without positions, to compare shapes. */
function shape(expr: Expression): unknown {
  switch (expr.kind) {
    case 'literal':
      return expr.value;
    case 'name':
      return { name: [...expr.path] };
    case 'list':
      return { list: expr.items.map(shape) };
    case 'not':
      return { not: shape(expr.operand) };
    case 'logical':
      return { [expr.operator]: expr.operands.map(shape) };
    case 'comparison':
      return { [expr.operator]: [shape(expr.left), shape(expr.right)] };
  }
}

const parsed = (source: string): unknown => shape(parseExpression(source));

function syntaxErrorOf(source: string): ExpressionSyntaxError {
  try {
    parseExpression(source);
  } catch (error) {
    assert.ok(error instanceof ExpressionSyntaxError, `expected a syntax error for ${JSON.stringify(source)}`);
    return error;
  }
  assert.fail(`expected ${JSON.stringify(source)} not to parse`);
}

const noNames: NameLookup = () => undefined;
const value = (source: string, lookup: NameLookup = noNames): unknown =>
  evaluateExpression(parseExpression(source), lookup);

const thing = {
  thing_key: 'b0i1l2e3r7',
  name: 'Boiler 7',
  description: 'North wing boiler',
  tags: ['boiler', 'north'],
  thing_template_key: 'tpl0000001',
  thing_template_name: 'Boiler',
  bi_directional: true,
  alive: false,
  user_defined_properties: { site: 'Pune', floor: '3', enabled: 'true', 'floor no': '3A' },
};

const eventData = { temperature: 85, mode: 'run', pressure: '2.5', machine: { status: 'on', rpm: 1200 } };

describe('expressions: parsing', () => {
  it('when and and or are mixed then and binds tighter than or', () => {
    assert.deepEqual(parsed('a or b and c'), { or: [{ name: ['a'] }, { and: [{ name: ['b'] }, { name: ['c'] }] }] });
    assert.deepEqual(parsed('a and b or c'), { or: [{ and: [{ name: ['a'] }, { name: ['b'] }] }, { name: ['c'] }] });
  });

  it('when not precedes a comparison then it negates the whole comparison', () => {
    assert.deepEqual(parsed('not a == 1'), { not: { '==': [{ name: ['a'] }, 1] } });
    assert.deepEqual(parsed('not a and b'), { and: [{ not: { name: ['a'] } }, { name: ['b'] }] });
    assert.deepEqual(parsed('not not a'), { not: { not: { name: ['a'] } } });
  });

  it('when parentheses group an or then it binds before the surrounding and', () => {
    assert.deepEqual(parsed('(a or b) and c'), { and: [{ or: [{ name: ['a'] }, { name: ['b'] }] }, { name: ['c'] }] });
    assert.deepEqual(parsed('((a))'), { name: ['a'] });
  });

  it('when the same logical operator repeats then it forms one flat node', () => {
    assert.deepEqual(parsed('a and b and c'), { and: [{ name: ['a'] }, { name: ['b'] }, { name: ['c'] }] });
  });

  it('when every comparison operator is used then each is read', () => {
    for (const operator of ['==', '!=', '>', '>=', '<', '<=', 'contains', 'in']) {
      assert.deepEqual(parsed(`x ${operator} 1`), { [operator]: [{ name: ['x'] }, 1] });
    }
    assert.deepEqual(parsed('x>=1'), { '>=': [{ name: ['x'] }, 1] });
  });

  it('when keywords are written in capitals then they read as keywords', () => {
    assert.deepEqual(parsed('NOT a AND b Or c CONTAINS TRUE'), parsed('not a and b or c contains true'));
  });

  it('when literals are written then numbers, strings, booleans and null come out', () => {
    assert.equal(parsed('42'), 42);
    assert.equal(parsed('3.25'), 3.25);
    assert.equal(parsed('-7'), -7);
    assert.equal(parsed('- 7.5'), -7.5);
    assert.equal(parsed('1e3'), 1000);
    assert.equal(parsed('2.5E-1'), 0.25);
    assert.ok(Object.is(parsed('-0'), 0));
    assert.equal(parsed('true'), true);
    assert.equal(parsed('False'), false);
    assert.equal(parsed('null'), null);
  });

  it('when strings use either quote and escapes then the text is decoded', () => {
    assert.equal(parsed(`'single'`), 'single');
    assert.equal(parsed(`"double"`), 'double');
    assert.equal(parsed(`'it\\'s'`), "it's");
    assert.equal(parsed(`"say \\"hi\\""`), 'say "hi"');
    assert.equal(parsed(`'back\\\\slash'`), 'back\\slash');
    assert.equal(parsed(`'a\\nb\\tc'`), 'a\nb\tc');
    assert.equal(parsed(`"it's"`), "it's");
    assert.equal(parsed(`''`), '');
  });

  it('when a name has dots then it becomes its path segments, quoted segments included', () => {
    assert.deepEqual(parseExpression('user_defined_properties.site'), {
      kind: 'name',
      path: ['user_defined_properties', 'site'],
      position: 0,
    });
    const quoted = parseExpression(`user_defined_properties.'floor no'.x == 1`);
    assert.deepEqual(referencedNames(quoted), [['user_defined_properties', 'floor no', 'x']]);
    assert.deepEqual(referencedNames(parseExpression('thing.in == 1')), [['thing', 'in']]);
    assert.deepEqual(referencedNames(parseExpression('_a1.B_2 == 1')), [['_a1', 'B_2']]);
  });

  it('when lists are written then their items are values, empty and nested lists included', () => {
    assert.deepEqual(parsed(`x in [1, 'a', null, true, -2]`), {
      in: [{ name: ['x'] }, { list: [1, 'a', null, true, -2] }],
    });
    assert.deepEqual(parsed('[]'), { list: [] });
    assert.deepEqual(parsed('[[1], (a or b), y.z]'), {
      list: [{ list: [1] }, { or: [{ name: ['a'] }, { name: ['b'] }] }, { name: ['y', 'z'] }],
    });
  });

  it('when nodes are parsed then each keeps the offset where its text starts', () => {
    const expr = parseExpression('  a == 1 and (b or c)');
    assert.equal(expr.kind, 'logical');
    assert.equal(expr.position, 2);
    if (expr.kind !== 'logical') return;
    assert.equal(expr.operands[1]?.position, 14);
  });

  it('when a parsed expression is formatted then it reads back as the same tree', () => {
    for (const source of [
      `tags contains 'boiler' and user_defined_properties.site == 'Pune'`,
      `temperature > 80 and not (mode == 'test')`,
      `(a or b) or c`,
      `not not x`,
      `x in [1, -2.5, 'it\\'s', null] or y.'two words' != false`,
    ]) {
      const formatted = formatExpression(parseExpression(source));
      assert.deepEqual(parsed(formatted), parsed(source), formatted);
    }
    assert.equal(formatExpression(parseExpression('a==1 AND NOT(b)')), 'a == 1 and not b');
    assert.equal(formatExpression(parseExpression('not (a == 1)')), 'not (a == 1)');
  });
});

describe('expressions: syntax errors', () => {
  const cases: Array<[string, string, number]> = [
    ['(a == 1 and b)) ', "unexpected ')' at position 14", 14],
    ["a == 'abc", 'unterminated string starting at position 5', 5],
    ['name == "x', 'unterminated string starting at position 8', 8],
    ['a == 1 and', 'expected a value at position 10 (end of expression)', 10],
    ['', 'expected a value at position 0 (end of expression)', 0],
    ['a == )', "unexpected ')' at position 5 (expected a value)", 5],
    ['(a == 1', "expected ')' at position 7 (end of expression)", 7],
    ['[1, 2', "expected ',' or ']' at position 5 (end of expression)", 5],
    ['[1 2]', "unexpected number 2 at position 3 (expected ',' or ']')", 3],
    ['a b', "unexpected name 'b' at position 2 (expected 'and' or 'or')", 2],
    ['a = 1', "unexpected '=' at position 2 (use '==' to compare)", 2],
    ['a && b', "unexpected '&' at position 2 (use 'and')", 2],
    ['!a', "unexpected '!' at position 0 (use 'not')", 0],
    ['a == #', "unexpected character '#' at position 5", 5],
    ['a == -b', "unexpected name 'b' at position 6 (expected a number after '-')", 6],
    ['1 < a < 3', "unexpected '<' at position 6 (comparisons cannot be chained; join them with 'and')", 6],
    ['a.', "expected a name after '.' at position 2", 2],
    ['a..b', "expected a name after '.' at position 2", 2],
    ['12abc', 'invalid number at position 0', 0],
    ['1.2.3', 'invalid number at position 0', 0],
    ['x > 1e999', 'number out of range at position 4', 4],
    [`'\\q'`, `unknown escape '\\q' at position 1 (a string may use \\' \\" \\\\ \\n \\t \\r)`, 1],
    ['and', "unexpected 'and' at position 0 (expected a value)", 0],
    ['a == not b', "unexpected 'not' at position 5 (expected a value)", 5],
    [`a ${'b'.repeat(50)}`, `unexpected name '${'b'.repeat(37)}...' at position 2 (expected 'and' or 'or')`, 2],
  ];
  for (const [source, message, position] of cases) {
    it(`when ${JSON.stringify(source)} is parsed then the error names position ${position}`, () => {
      const error = syntaxErrorOf(source);
      assert.equal(error.message, message);
      assert.equal(error.position, position);
      assert.ok(error instanceof ExpressionError);
      assert.equal(error.name, 'ExpressionSyntaxError');
    });
  }

  it('when the expression is not text then it is a syntax error at position 0', () => {
    const error = syntaxErrorOf(42 as unknown as string);
    assert.equal(error.message, 'expected the expression as text at position 0');
    assert.equal(error.position, 0);
  });

  it('when the text is longer than the limit then it is refused before reading', () => {
    const error = syntaxErrorOf('a'.repeat(MAX_EXPRESSION_LENGTH + 1));
    assert.match(error.message, /^too long at position 4096/);
  });

  it('when nesting is deeper than the limit then it is a syntax error, not a stack overflow', () => {
    for (const source of [
      '('.repeat(4000),
      '['.repeat(200),
      'not '.repeat(1000),
      `${'('.repeat(65)}a${')'.repeat(65)}`,
    ]) {
      assert.match(syntaxErrorOf(source).message, /^nested too deeply at position \d+/);
    }
    assert.doesNotThrow(() => parseExpression(`${'('.repeat(64)}a${')'.repeat(64)}`));
  });

  it('when a long flat chain is given then it parses and evaluates without deep recursion', () => {
    const expr = parseExpression(`${'a and '.repeat(600)}a`);
    assert.equal(
      matchesExpression(expr, () => true),
      true,
    );
    assert.equal(
      matchesExpression(expr, () => false),
      false,
    );
  });
});

describe('expressions: evaluating a group expression against a thing', () => {
  const lookup = thingLookup(thing);
  const cases: Array<[string, boolean]> = [
    [`tags contains 'boiler' and user_defined_properties.site == 'Pune'`, true],
    [`tags contains 'chiller' or user_defined_properties.site == 'Mumbai'`, false],
    [`'north' in tags`, true],
    [`name contains 'Boiler'`, true],
    [`name contains 'boiler'`, false],
    [`description contains 'wing' and not alive`, true],
    [`bi_directional == true and alive == false`, true],
    [`bi_directional`, true],
    [`alive`, false],
    [`user_defined_properties.floor == 3`, true],
    [`user_defined_properties.floor >= 2.5`, true],
    [`user_defined_properties.floor == '3'`, true],
    [`user_defined_properties.floor == '3.0'`, false],
    [`user_defined_properties.enabled == true`, true],
    [`user_defined_properties.'floor no' == '3A'`, true],
    [`user_defined_properties.missing == null`, true],
    [`user_defined_properties.missing != 'x'`, true],
    [`user_defined_properties.missing > 0`, false],
    [`thing_template_name in ['Boiler', 'Chiller']`, true],
    [`thing_key == "b0i1l2e3r7"`, true],
    [`tags == ['boiler', 'north']`, true],
  ];
  for (const [source, expected] of cases) {
    it(`when ${source} is evaluated then it is ${expected}`, () => {
      assert.equal(matchesExpression(parseThingExpression(source), lookup), expected);
    });
  }
});

describe('expressions: evaluating a rule condition against an event and its thing', () => {
  const lookup = ruleConditionLookup(eventData, thing);
  const cases: Array<[string, boolean]> = [
    [`temperature > 80 and not (mode == 'test')`, true],
    [`temperature > 90 or mode == 'test'`, false],
    [`machine.status == 'on' and machine.rpm >= 1200`, true],
    [`pressure > 2`, true],
    [`pressure == 2.5`, true],
    [`thing.name == 'Boiler 7' and thing.tags contains 'north'`, true],
    [`thing.user_defined_properties.site in ['Pune', 'Delhi']`, true],
    [`humidity > 10`, false],
    [`not (humidity > 10)`, true],
    [`humidity == null`, true],
  ];
  for (const [source, expected] of cases) {
    it(`when ${source} is evaluated then it is ${expected}`, () => {
      assert.equal(matchesExpression(parseRuleCondition(source), lookup), expected);
    });
  }
});

describe('expressions: comparison semantics', () => {
  it('when equality mixes types then numbers meet numeric text and null meets only null', () => {
    assert.equal(value(`3 == '3'`), true);
    assert.equal(value(`3 == ' 3.0 '`), true);
    assert.equal(value(`3 == 'three'`), false);
    assert.equal(value(`16 == '0x10'`), false);
    assert.equal(value(`0 == ''`), false);
    assert.equal(value(`'3' == '3.0'`), false);
    assert.equal(value(`null == null`), true);
    assert.equal(value(`missing == null`), true);
    assert.equal(value(`0 == null`), false);
    assert.equal(value(`'' == null`), false);
    assert.equal(value(`false == null`), false);
    assert.equal(value(`true == 'true'`), true);
    assert.equal(value(`true == 1`), false);
    assert.equal(value(`'a' != 'b'`), true);
    assert.equal(value(`null != 0`), true);
  });

  it('when ordering mixes types then only numbers (or numeric text) and two strings compare', () => {
    assert.equal(value(`10 > 9`), true);
    assert.equal(value(`'10' > 9`), true);
    assert.equal(value(`'10' > '9'`), false);
    assert.equal(value(`'b' > 'a'`), true);
    assert.equal(value(`'abc' > 5`), false);
    assert.equal(value(`'abc' <= 5`), false);
    assert.equal(value(`null < 1`), false);
    assert.equal(value(`true > false`), false);
    assert.equal(value(`[2] > 1`), false);
    assert.equal(value(`2 >= 2 and 2 <= 2 and 1 < 2`), true);
  });

  it('when contains and in meet lists, strings and other values then they test membership or substrings', () => {
    assert.equal(value(`[1, 2, 3] contains '2'`), true);
    assert.equal(value(`[1, 2, 3] contains 4`), false);
    assert.equal(value(`[null] contains missing`), true);
    assert.equal(value(`'boiler room' contains 'room'`), true);
    assert.equal(value(`'floor 3' contains 3`), true);
    assert.equal(value(`'abc' contains ''`), true);
    assert.equal(value(`'true' contains true`), false);
    assert.equal(value(`5 contains 5`), false);
    assert.equal(value(`null contains null`), false);
    assert.equal(value(`2 in [1, 2]`), true);
    assert.equal(value(`'oil' in 'boiler'`), true);
    assert.equal(value(`'x' in null`), false);
  });

  it('when and, or and not meet values that are not booleans then only true counts as true', () => {
    assert.equal(value(`1 and true`), false);
    assert.equal(value(`'yes' or false`), false);
    assert.equal(value(`null or true`), true);
    assert.equal(value(`not 1`), true);
    assert.equal(value(`not null`), true);
    assert.equal(value(`not true`), false);
    assert.equal(value(`not 'true'`), true);
    assert.equal(matchesExpression(parseExpression(`'true'`), noNames), false);
    assert.deepEqual(value(`[1, missing]`), [1, null]);
  });

  it('when or is already true then the rest is not looked up', () => {
    const asked: string[] = [];
    const lookup: NameLookup = (path) => {
      asked.push(path.join('.'));
      return path[0] === 'a';
    };
    assert.equal(value('a or b', lookup), true);
    assert.equal(value('b and a', lookup), false);
    assert.deepEqual(asked, ['a', 'b']);
  });

  it('when data holds cycles or odd objects then comparisons answer without throwing', () => {
    const cyclic: unknown[] = [];
    cyclic.push(cyclic, cyclic);
    const other: unknown[] = [];
    other.push(other, other);
    const data: Record<string, unknown> = {
      cyclic,
      other,
      map: new Map([[1, 2]]),
      date: new Date(Number.NaN),
      big: 10n,
      symbol: Symbol('s'),
      fn: () => 1,
    };
    const lookup: NameLookup = (path) => readPath(data, path);
    assert.equal(value('cyclic == other', lookup), false);
    assert.equal(value('cyclic contains other', lookup), false);
    assert.equal(value('big == 10 and big > 9', lookup), true);
    for (const name of ['map', 'date', 'symbol', 'fn']) {
      assert.equal(value(`${name} == ${name} or ${name} > 1 or ${name} contains 1 or 1 in ${name}`, lookup), false);
    }
  });

  it('when booleans meet the text false or numbers meet text past the largest number then they compare as documented', () => {
    assert.equal(value(`false == 'false'`), true);
    assert.equal(value(`false == 'true'`), false);
    assert.equal(value(`'false' != false`), false);
    assert.equal(valuesEqual('1e308', 1e308), true);
    assert.equal(valuesEqual('1e400', Number.MAX_VALUE), false, 'text beyond any number is no number');
    assert.equal(valuesEqual('-1e400', -Number.MAX_VALUE), false);
  });

  it('when two lists are too long to compare within the step budget then they are not equal, rather than slow', () => {
    const items = (n: number) => Array.from({ length: n }, (_, i) => i);
    assert.equal(valuesEqual(items(5_000), items(5_000)), true);
    assert.equal(valuesEqual(items(20_000), items(20_000)), false);
  });
});

describe('expressions: names', () => {
  it('when names are listed then each distinct path appears once in source order', () => {
    const expr = parseExpression(`b.c > 1 and (a == 2 or b.c < 9) and not [d, 1] contains e`);
    assert.deepEqual(referencedNames(expr), [['b', 'c'], ['a'], ['d'], ['e']]);
  });

  it('when a name is not allowed then the error names it and its position', () => {
    const expr = parseExpression(`name == 'x' or colour.hue == 'red'`);
    assert.throws(
      () => validateNames(expr, isThingFieldName),
      (error: unknown) =>
        error instanceof ExpressionNameError &&
        error instanceof ExpressionError &&
        error.message === "unknown name 'colour.hue' at position 15" &&
        error.position === 15 &&
        error.path.join('.') === 'colour.hue',
    );
    assert.doesNotThrow(() => validateNames(expr, () => true));
  });

  it('when a group expression names something other than a thing field then it is refused', () => {
    assert.throws(
      () => parseThingExpression('temperature > 1'),
      /^ExpressionNameError: unknown name 'temperature' at position 0 \(a group expression may use name, description/,
    );
    assert.throws(() => parseThingExpression('user_defined_properties == 1'), /unknown name 'user_defined_properties'/);
    assert.throws(() => parseThingExpression('name.first == 1'), /unknown name 'name.first'/);
    assert.doesNotThrow(() =>
      parseThingExpression(
        'name == 1 and description == 1 and thing_key == 1 and tags == 1 and thing_template_key == 1 and ' +
          'thing_template_name == 1 and bi_directional and alive and user_defined_properties.x == 1',
      ),
    );
  });

  it('when a rule condition names thing fields then only known ones pass and bare names are metrics', () => {
    assert.ok(isRuleConditionName(['temperature']));
    assert.ok(isRuleConditionName(['machine', 'status']));
    assert.ok(isRuleConditionName(['thing', 'alive']));
    assert.ok(isRuleConditionName(['thing', 'user_defined_properties', 'site']));
    assert.ok(!isRuleConditionName(['thing']));
    assert.ok(!isRuleConditionName(['thing', 'colour']));
    assert.throws(
      () => parseRuleCondition('temperature > 1 and thing.colour == 2'),
      /unknown name 'thing.colour' at position 20/,
    );
  });

  it('when a path walks data then only own properties are read', () => {
    const data = { a: { b: [10, 20] } };
    assert.equal(readPath(data, ['a', 'b', '1']), 20);
    assert.equal(readPath(data, ['a', 'b', 'length']), undefined);
    assert.equal(readPath(data, ['constructor']), undefined);
    assert.equal(readPath(data, ['__proto__']), undefined);
    assert.equal(readPath(data, ['a', 'x', 'y']), undefined);
    assert.equal(value('constructor == null and toString == null', thingLookup({})), true);
  });
});

describe('expressions: properties', () => {
  const KEYWORDS = ['and', 'or', 'not', 'contains', 'in', 'true', 'false', 'null'];
  // Pieces of the grammar and typical mistakes, glued together in random order.
  const pieces = [
    ...'( ) [ ] , - . == != > >= < <= = ! && || and OR Not contains in true FALSE null'.split(' '),
    ...`temperature thing.name tags user_defined_properties.floor a.'b_c' x. x..y`.split(' '),
    ...'0 42 3.5 1e3 1e 12abc 1e999'.split(' '),
    ...`'boiler' "Pune" 'it\\'s' "q\\"x" 'bad\\q' 'open "open '' \\ # @ é`.split(' '),
    '\u00a0',
    '\n',
    '\u0000',
    '\ud800',
  ];
  const separator = fc.constantFrom('', ' ', '  ', '\t');
  const tokenSoup = fc
    .array(fc.tuple(fc.constantFrom(...pieces), separator), { maxLength: 30 })
    .map((parts) => parts.map(([piece, sep]) => piece + sep).join(''));

  const identifier = fc
    .stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,6}$/)
    .filter((word) => !KEYWORDS.includes(word.toLowerCase()));
  const nameNode = fc
    .tuple(
      identifier,
      fc.array(fc.oneof(identifier, fc.constantFrom('in', 'and', 'a.b'), fc.string()), { maxLength: 2 }),
    )
    .map(([first, rest]): Expression => ({ kind: 'name', path: [first, ...rest], position: 0 }));
  const literalNode = fc
    .oneof(
      fc.integer({ min: -1000, max: 1000 }),
      fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => (n === 0 ? 0 : n)),
      fc.string(),
      fc.string({ unit: 'binary' }),
      fc.boolean(),
      fc.constant(null),
    )
    .map((value): Expression => ({ kind: 'literal', value, position: 0 }));
  const operator = fc.constantFrom('==', '!=', '>', '>=', '<', '<=', 'contains', 'in' as const);

  // Trees up to four levels deep, built bottom-up so each level reuses the one below.
  const trees: fc.Arbitrary<Expression>[] = [fc.oneof(literalNode, nameNode)];
  for (let depth = 1; depth <= 4; depth++) {
    const smaller = trees[depth - 1]!;
    trees.push(
      fc.oneof(
        { weight: 2, arbitrary: smaller },
        fc.array(smaller, { maxLength: 3 }).map((items): Expression => ({ kind: 'list', items, position: 0 })),
        smaller.map((operand): Expression => ({ kind: 'not', operand, position: 0 })),
        fc
          .tuple(fc.constantFrom('and', 'or' as const), fc.array(smaller, { minLength: 2, maxLength: 3 }))
          .map(([op, operands]): Expression => ({ kind: 'logical', operator: op, operands, position: 0 })),
        fc
          .tuple(operator, smaller, smaller)
          .map(([op, left, right]): Expression => ({ kind: 'comparison', operator: op, left, right, position: 0 })),
      ),
    );
  }
  const tree = trees[4]!;

  // Well-formed text with a few random cuts and insertions: mostly near-misses, sometimes still valid.
  const edit = fc.record({
    at: fc.nat(),
    cut: fc.nat({ max: 3 }),
    insert: fc.oneof(fc.constant(''), fc.constantFrom(...pieces)),
  });
  const nearlyValid = fc.tuple(tree, fc.array(edit, { maxLength: 2 })).map(([expr, edits]) =>
    edits.reduce((text, { at, cut, insert }) => {
      const i = text.length === 0 ? 0 : at % (text.length + 1);
      return text.slice(0, i) + insert + text.slice(i + cut);
    }, formatExpression(expr)),
  );

  const anyText = fc.oneof(
    fc.string(),
    fc.string({ unit: 'binary' }),
    fc.string({ unit: 'grapheme' }),
    tokenSoup,
    nearlyValid,
  );

  const data = fc.anything({
    withBigInt: true,
    withBoxedValues: true,
    withDate: true,
    withMap: true,
    withSet: true,
    withNullPrototype: true,
    withObjectString: true,
    withSparseArray: true,
    withTypedArray: true,
  });

  function parseOrSyntaxError(source: string): Expression | undefined {
    try {
      return parseExpression(source);
    } catch (error) {
      if (!(error instanceof ExpressionSyntaxError)) throw error;
      assert.ok(Number.isInteger(error.position) && error.position >= 0 && error.position <= source.length);
      assert.ok(error.message.includes(`at position ${error.position}`), error.message);
      return undefined;
    }
  }

  it('when any text is parsed then it either parses or throws ExpressionSyntaxError naming a position', () => {
    fc.assert(
      fc.property(anyText, (source) => {
        parseOrSyntaxError(source);
      }),
      { numRuns: 5000 },
    );
  });

  it('when text that parses is evaluated against random data then it never throws', () => {
    const namesToData = fc.dictionary(fc.oneof(identifier, fc.constantFrom('temperature', 'thing', 'tags')), data);
    fc.assert(
      fc.property(fc.oneof(tokenSoup, nearlyValid), namesToData, data, (source, record, fallback) => {
        const expr = parseOrSyntaxError(source);
        if (!expr) return;
        // Half the names resolve into the record, the rest to one random value.
        const lookup: NameLookup = (path) => (path.length % 2 === 0 ? fallback : readPath(record, path));
        evaluateExpression(expr, lookup);
        assert.equal(typeof matchesExpression(expr, lookup), 'boolean');
      }),
      { numRuns: 3000 },
    );
  });

  it('when any tree is formatted then the text parses back to the same tree', () => {
    fc.assert(
      fc.property(tree, (expr) => {
        assert.deepEqual(shape(parseExpression(formatExpression(expr))), shape(expr));
      }),
      { numRuns: 2000 },
    );
  });

  it('when any tree is evaluated against random data then it never throws and not flips the match', () => {
    fc.assert(
      fc.property(tree, data, (expr, root) => {
        const lookup: NameLookup = (path) => (path.length === 1 ? root : readPath(root, path.slice(1)));
        const matched = matchesExpression(expr, lookup);
        assert.equal(matchesExpression({ kind: 'not', operand: expr, position: 0 }, lookup), !matched);
      }),
      { numRuns: 2000 },
    );
  });

  it('when any tree is compiled then it gives the values the tree walk gives, on any data', () => {
    // Numbers and numeric text often, as rule conditions mostly compare metrics with number literals.
    const reading = fc.oneof(
      data,
      fc.double(),
      fc.integer({ min: -1000, max: 1000 }),
      fc.integer({ min: -3, max: 3 }),
      fc.integer({ min: -12, max: 12 }).map((n) => ` ${n / 4} `),
      fc.constantFrom('1e3', 'x', '', 'NaN', 'Infinity', '-0'),
    );
    // And comparisons of a name with a small number, either way round, so readings often equal it.
    const withNumber = fc
      .tuple(operator, nameNode, fc.integer({ min: -3, max: 3 }), fc.boolean())
      .map(([op, name, n, flip]): Expression => {
        const literal: Expression = { kind: 'literal', value: n, position: 0 };
        return {
          kind: 'comparison',
          operator: op,
          left: flip ? literal : name,
          right: flip ? name : literal,
          position: 0,
        };
      });
    fc.assert(
      fc.property(fc.oneof(tree, withNumber), fc.dictionary(identifier, reading), reading, (expr, record, fallback) => {
        const asked: string[][] = [];
        const lookup: NameLookup = (path) => {
          asked.push([...path]);
          return path.length === 1 && Object.hasOwn(record, path[0]!) ? record[path[0]!] : fallback;
        };
        const walked = evaluateExpression(expr, lookup);
        const walkedAsked = asked.splice(0);
        assert.deepEqual(compileExpression(expr)(lookup), walked);
        assert.deepEqual(asked, walkedAsked, 'the same names are looked up, in the same order');
        assert.equal(compileMatcher(expr)(lookup), walked === true);
      }),
      { numRuns: 5000 },
    );
  });

  it('when any two values are compared for equality then the answer is symmetric', () => {
    fc.assert(
      fc.property(data, data, (a, b) => {
        assert.equal(valuesEqual(a, b), valuesEqual(b, a));
      }),
      { numRuns: 2000 },
    );
  });
});
