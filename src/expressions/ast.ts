/**
 * The syntax tree of an expression (docs/expressions.md). Every node keeps the 0-based offset where its
 * text starts, so later checks (unknown names) can point users at the right place.
 */
export type LiteralValue = string | number | boolean | null;

export type ComparisonOperator = '==' | '!=' | '>' | '>=' | '<' | '<=' | 'contains' | 'in';

export type LogicalOperator = 'and' | 'or';

export interface LiteralNode {
  readonly kind: 'literal';
  readonly value: LiteralValue;
  readonly position: number;
}

export interface ListNode {
  readonly kind: 'list';
  readonly items: readonly Expression[];
  readonly position: number;
}

/** A dotted name: `user_defined_properties.site` is `['user_defined_properties', 'site']`. */
export interface NameNode {
  readonly kind: 'name';
  readonly path: readonly string[];
  readonly position: number;
}

export interface NotNode {
  readonly kind: 'not';
  readonly operand: Expression;
  readonly position: number;
}

/** `a and b and c` is one node with three operands, so long chains never make a deep tree. */
export interface LogicalNode {
  readonly kind: 'logical';
  readonly operator: LogicalOperator;
  readonly operands: readonly Expression[];
  readonly position: number;
}

export interface ComparisonNode {
  readonly kind: 'comparison';
  readonly operator: ComparisonOperator;
  readonly left: Expression;
  readonly right: Expression;
  readonly position: number;
}

export type Expression = LiteralNode | ListNode | NameNode | NotNode | LogicalNode | ComparisonNode;

/** The direct children of a node, in source order. */
export function childrenOf(expr: Expression): readonly Expression[] {
  switch (expr.kind) {
    case 'literal':
    case 'name':
      return [];
    case 'list':
      return expr.items;
    case 'not':
      return [expr.operand];
    case 'logical':
      return expr.operands;
    case 'comparison':
      return [expr.left, expr.right];
  }
}
