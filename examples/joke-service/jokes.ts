/**
 * @module The joke table of the example joke service: a few real jokes per style and topic, with a
 * fallback topic.
 */

/** The joke styles the service knows (the `style` config param). */
export const JokeStyle = {
  Pun: 'pun',
  DadJoke: 'dad-joke',
  OneLiner: 'one-liner',
} as const;
/** One of {@link JokeStyle}'s values. */
export type JokeStyle = (typeof JokeStyle)[keyof typeof JokeStyle];

/** The topic categories; any other topic falls back to `default`. */
export type JokeCategory = 'programming' | 'animals' | 'food' | 'default';

/** How each style is named in the reply ("Here's a pun for you"). */
export const STYLE_LABELS: Readonly<Record<JokeStyle, string>> = {
  pun: 'pun',
  'dad-joke': 'dad joke',
  'one-liner': 'one-liner',
};

/** The jokes, by style and category. */
export const JOKES: Readonly<Record<JokeStyle, Readonly<Record<JokeCategory, readonly string[]>>>> = {
  pun: {
    programming: [
      "I'd tell you a UDP joke, but you might not get it.",
      'Debugging: removing the needles from the haystack you put there yourself.',
      "There's no place like 127.0.0.1.",
    ],
    animals: [
      'A cat walked into a bar and ordered a drink. The bartender said, "Sorry, we don\'t serve purr-sons under 18."',
      'What do you call a bear with no teeth? A gummy bear.',
      "Llamas are great at maths: they're always adding drama.",
    ],
    food: [
      "I'm reading a book about anti-gravity pancakes. It's impossible to put down.",
      'Why did the tomato blush? It saw the salad dressing.',
    ],
    default: [
      'Time flies like an arrow; fruit flies like a banana.',
      'I used to be a banker, but I lost interest.',
    ],
  },
  'dad-joke': {
    programming: [
      'Why do programmers prefer dark mode? Because light attracts bugs.',
      'How many programmers does it take to change a light bulb? None, that is a hardware problem.',
    ],
    animals: [
      'What do you call a fish with no eyes? A fsh.',
      "Why do cows wear bells? Because their horns don't work.",
      'What do you call a sleeping llama? A llama-zzz.',
    ],
    food: [
      "I don't trust stairs and I don't trust eggs: one's always up to something, the other cracks under pressure.",
      'What do you call a fake noodle? An impasta.',
    ],
    default: [
      "I'm afraid for the calendar. Its days are numbered.",
      'Did you hear about the claustrophobic astronaut? He just needed a little space.',
    ],
  },
  'one-liner': {
    programming: [
      'It works on my machine.',
      'There are 10 kinds of people: those who understand binary and those who do not.',
    ],
    animals: [
      'A dog is the only thing on earth that loves you more than it loves itself, until dinner.',
      'I named my dog Five Miles so I can say I walk Five Miles every day.',
    ],
    food: ["I'm on a seafood diet: I see food and I eat it.", 'Broccoli is just a tree that gave up.'],
    default: [
      'I told my wife she was drawing her eyebrows too high. She looked surprised.',
      'I would avoid the sushi if I were you. It is a little fishy.',
    ],
  },
};

const KEYWORDS: readonly [JokeCategory, readonly string[]][] = [
  [
    'programming',
    [
      'program',
      'code',
      'coding',
      'software',
      'computer',
      'bug',
      'developer',
      'javascript',
      'typescript',
      'python',
    ],
  ],
  ['animals', ['animal', 'cat', 'dog', 'fish', 'cow', 'bear', 'bird', 'pet', 'llama']],
  ['food', ['food', 'eat', 'pizza', 'pasta', 'cook', 'fruit', 'vegetable', 'egg', 'pancake', 'sushi']],
];

/** The category of a topic, by keyword; `default` when nothing matches. */
export function categoryOf(topic: string): JokeCategory {
  const t = topic.toLowerCase();
  for (const [category, words] of KEYWORDS) if (words.some((w) => t.includes(w))) return category;
  return 'default';
}

/** True when `value` is one of the known styles. */
export function isJokeStyle(value: unknown): value is JokeStyle {
  return typeof value === 'string' && Object.hasOwn(JOKES, value);
}

/** Picks a joke of `style` about `topic`; `random` returns a number in [0, 1). */
export function pickJoke(style: JokeStyle, topic: string, random: () => number = Math.random): string {
  const jokes = JOKES[style][categoryOf(topic)];
  return jokes[Math.min(jokes.length - 1, Math.floor(random() * jokes.length))]!;
}
