/**
 * The order desk agents' seed prompts (agent.ts): what they read with `llm.prompt(name, seed, vars)` until a text is
 * promoted. They state none of the house rules (world.ts), so a search has everything to learn from feedback.
 */

/** The one-prompt agent: it picks the field and writes the answer. */
export const DESK_PROMPT = 'Answer the question about the order record below with the value only.\n\nRecord: {record}\nQuestion: {question}';

/** The two-prompt agent's planner: it picks the field that answers the question. */
export const PLANNER_PROMPT =
  'Name the field of the order record that answers the question. Reply with the field name only.\n\n' +
  'Fields: order, customer, recipient, placed, shipped, total, items, paid\nQuestion: {question}';

/** ... and its executor: it writes the planner's field's value as the answer. */
export const EXECUTOR_PROMPT =
  'Write the value below as the answer to a question about an order. Reply with the answer only.\n\nField: {field}\nValue: {value}';
