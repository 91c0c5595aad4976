"""A generated set of multi-session conversations with labelled answer turns.

Written for this project (no outside data): sessions between a user and an
assistant, one item per turn, each session on one day of 2026. Small talk and
topic chatter are drawn from templates with varied vocabulary; planted among
them are the turns that answer a question, in six kinds:

- ``single``: a fact the user stated, asked back with some of its words;
- ``neighbour``: the answer turn holds none of the question's words, the turn it
  follows (the assistant's question) does ("What other languages ..." / "Python
  and C++ mostly");
- ``multi``: the same thing mentioned in several sessions, any of them answers;
- ``temporal``: "what did I buy in June": several look-alike turns, only the one
  of a session in that month answers (the month is not in the text);
- ``mismatch``: the question and the answer name the thing differently
  ("pets" / "two dogs");
- ``preference``: a stated like or dislike, asked as a recommendation.

Questions are phrased with filler words and other word forms than the answer
("started volunteering" / "start volunteer"), as people ask. The generator is
seeded: ``generate(7)`` is the same data on every run and machine, so none is
shipped (``python -m bench.convdata --seed 7 --out F`` writes it to a file to read).
Seed 1 is the development split (parameters were chosen on it); seed 7 is the
one reported.
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

MONTHS = [
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
]  # fmt: skip

NAMES = ["Maya", "Tomas", "Priya", "Jonah", "Elena", "Kofi", "Sven", "Aiko", "Rafael", "Nadia", "Omar", "Greta"]
PLACES = ["Lisbon", "Kyoto", "Denver", "Oslo", "Marrakesh", "Hanoi", "Porto", "Quebec", "Tallinn", "Cusco", "Perth"]
TOPICS = [
    "the quarterly report", "my sister's wedding", "the new bike lane", "a podcast about history",
    "the garden", "tax forms", "the team offsite", "a documentary on whales", "the kitchen renovation",
    "my running schedule", "the book club", "a chess puzzle", "our neighbour's fence", "the weather",
    "a budgeting app", "the train strike", "a recipe for soup", "my laptop battery", "the dentist",
    "a jazz concert", "the school fundraiser", "my password manager", "the cat next door", "a board game night",
]  # fmt: skip
FILLER_USER = [
    "Can you help me think about {topic}?",
    "I was reading about {topic} this morning and got distracted.",
    "Quick question about {topic}, nothing urgent.",
    "Remind me later to look at {topic} again.",
    "Honestly {topic} took most of my week.",
    "I talked to {name} about {topic} yesterday.",
    "Do you think {topic} can wait until next week?",
    "What would you do about {topic} if you were me?",
    "I keep going back and forth on {topic}.",
    "{name} asked me what I think of {topic}, I had no answer.",
    "Thanks, that makes sense for {topic}.",
    "I went to the store and forgot half the list again.",
    "My coffee went cold while I was on a call.",
    "The dog next door barked all night, I barely slept.",
    "We might take a short trip somewhere when it gets warmer.",
    "I started a new notebook for ideas, let's see if it lasts.",
    "Work was busy, a lot of meetings and not much done.",
    "I watched a film about a road trip, it was fine.",
    "Can you summarise what we said about {topic}?",
    "I bought some groceries and cooked pasta, nothing fancy.",
]  # fmt: skip
FILLER_ASSISTANT = [
    "Sure, let's break {topic} into smaller steps.",
    "That sounds like a lot; what part of {topic} worries you most?",
    "Here is a short checklist for {topic}.",
    "It can wait if nothing depends on it; {topic} seems flexible.",
    "Good idea. I can remind you about {topic} next time.",
    "Many people find {topic} easier with a fixed time each week.",
    "I would start with the deadline and work backwards.",
    "That is understandable. Do you want a plan or just to talk it through?",
    "Noted. Anything else on your mind today?",
    "A short walk sometimes helps when a week is that full.",
    "You could ask {name} for a second opinion on {topic}.",
    "Happy to help. Tell me more when you are ready.",
]  # fmt: skip


@dataclass
class Plant:
    """Turns to place (in order, one session each group) and the question that they answer."""

    kind: str
    groups: list[list[tuple[str, str, bool]]]  # per session: (role, text, is_answer)
    question: str
    month: int | None = None  # temporal: the month the answering session must fall in


def _single(r: random.Random) -> Plant:
    name, place = r.choice(NAMES), r.choice(PLACES)
    options = [
        (f"I finally started volunteering at the animal shelter on {r.choice(['Saturdays', 'Sundays', 'weekends'])}.",
         "When do I volunteer at the shelter?"),
        (f"My cousin {name} is moving to {place} for a job in the autumn.",
         f"Where is {name} moving to?"),
        (f"I've been learning to play the {r.choice(['cello', 'banjo', 'ukulele', 'harp'])} for about six months now.",
         "Which instrument am I learning to play?"),
        (f"I signed up for a {r.choice(['pottery', 'woodworking', 'watercolour', 'sourdough'])} class that meets every Tuesday evening.",
         "What class did I sign up for on Tuesdays?"),
        (f"I ran my first half marathon in {r.choice(['1:58', '2:04', '2:11', '1:49'])} last weekend, very proud.",
         "What was my time in the half marathon?"),
        (f"My daughter's school play is called {r.choice(['The Paper Moon', 'Lanterns', 'The Glass Fox', 'Tidewater'])}.",
         "What is the name of the play my daughter is in?"),
        (f"I switched my phone plan to a cheaper one with {r.choice(['20', '30', '50'])} gigabytes of data.",
         "How much data does my new phone plan have?"),
        (f"My landlord said the rent goes up by {r.choice(['4', '6', '8'])} percent next year.",
         "How much is my rent increasing?"),
        (f"I'm reading a novel by {name} {r.choice(['Okafor', 'Lindqvist', 'Moreau'])}, about a lighthouse keeper.",
         "Who wrote the book I'm reading about the lighthouse?"),
        (f"I got my {r.choice(['driving', 'sailing', 'diving'])} licence renewed, it's valid until 2031.",
         "Until when is my licence valid?"),
    ]  # fmt: skip
    fact, question = r.choice(options)
    return Plant("single", [[("user", fact, True)]], question)


def _neighbour(r: random.Random) -> Plant:
    options = [
        ("Besides Rust, what other programming languages have you worked with?",
         f"Mostly Python and {r.choice(['C++', 'Go', 'Haskell', 'Kotlin'])}, a bit of SQL.",
         "What other programming languages have I worked with?"),
        ("Which airline did you end up booking for the conference?",
         f"{r.choice(['Finnair', 'TAP', 'KLM', 'Iberia'])}, the times were better and it was cheaper.",
         "Which airline did I book for the conference?"),
        ("What colour did you pick for the living room walls?",
         f"A soft {r.choice(['sage green', 'terracotta', 'dusty blue', 'warm grey'])}, the samples looked nice.",
         "What colour did I pick for the living room walls?"),
        ("How many people are coming to the birthday dinner?",
         f"About {r.choice(['twelve', 'eight', 'fifteen'])}, if everyone shows up.",
         "How many people are coming to my birthday dinner?"),
        ("What did the doctor say about your knee?",
         f"Nothing serious, {r.choice(['a strained ligament', 'mild tendinitis', 'some inflammation'])}, rest and physio.",
         "What did the doctor say about my knee?"),
        ("Which neighbourhood are you looking at for the new apartment?",
         f"{r.choice(['Alfama', 'Gion', 'Grünerløkka', 'Kalamaja'])}, close to the river.",
         "Which neighbourhood am I looking at for an apartment?"),
        ("What's the name of the restaurant you liked so much?",
         f"It's called {r.choice(['Osteria Nove', 'Little Saigon Kitchen', 'Casa Lume'])}, the pasta was unreal.",
         "What was the name of the restaurant I liked?"),
        ("What time does your new shift start?",
         f"Six in the morning, {r.choice(['brutal', 'early but fine', 'I will survive'])}.",
         "What time does my new shift start?"),
    ]  # fmt: skip
    ask, answer, question = r.choice(options)
    return Plant("neighbour", [[("assistant", ask, False), ("user", answer, True)]], question)


def _multi(r: random.Random) -> Plant:
    options = [
        (["We went hiking up the ridge trail, my legs are dead.",
          "Another hike this weekend, the lake loop this time.",
          "Hiked with {name} to the waterfall, it was packed."],
         "Where have I gone hiking recently?"),
        (["I had a call with the recruiter from the fintech startup.",
          "Second interview with the fintech startup went okay.",
          "The fintech startup sent an offer, I need to decide by Friday."],
         "How is my job search with the fintech startup going?"),
        (["My tomato plants are finally flowering.",
          "Picked the first tomatoes from the garden today.",
          "Some of the tomato plants got blight, so annoying."],
         "How are my tomato plants doing?"),
        (["I'm saving for a trip to {place} next year.",
          "Booked the flights to {place}, it's happening.",
          "Looking for a hotel in {place} near the old town."],
         "What have I said about my trip to {place}?"),
        (["Started physiotherapy for my shoulder.",
          "Physio said my shoulder is improving slowly.",
          "Shoulder feels almost normal after the physio sessions."],
         "How is my shoulder recovery going?"),
    ]  # fmt: skip
    texts, question = r.choice(options)
    name, place = r.choice(NAMES), r.choice(PLACES)
    groups = [[("user", t.format(name=name, place=place), True)] for t in texts]
    return Plant("multi", groups, question.format(place=place))


def _temporal(r: random.Random) -> Plant:
    """One answer in a session of ``month``; look-alike turns in sessions of other months."""
    options = [
        ("I bought {thing} today, been wanting one for ages.", "What did I buy in {month}?",
         ["a new espresso machine", "a used kayak", "a standing desk", "a pair of trail shoes", "a record player"]),
        ("We went to a concert by {thing} last night.", "Which concert did I go to in {month}?",
         ["a string quartet", "an indie band from Bristol", "a gospel choir", "a jazz trio"]),
        ("Had dinner at {thing} with friends.", "Where did I have dinner with friends in {month}?",
         ["a Georgian place downtown", "the ramen bar", "a tapas restaurant", "the rooftop grill"]),
        ("I visited {thing} for the weekend.", "Where did I go for a weekend in {month}?",
         ["my grandparents in the countryside", "a spa hotel", "the coast", "an old college friend"]),
    ]  # fmt: skip
    text, question, things = r.choice(options)
    month = r.randrange(12)
    picks = r.sample(things, 3)
    groups = [[("user", text.format(thing=picks[0]), True)]] + [
        [("user", text.format(thing=t), False)] for t in picks[1:]
    ]
    return Plant("temporal", groups, question.format(month=MONTHS[month]), month)


def _mismatch(r: random.Random) -> Plant:
    options = [
        (f"My two dogs, {r.choice(NAMES)} and Pepper, chewed the sofa again.", "What pets do I have?"),
        ("We spent the night by the campfire and slept in a tent by the river.", "Did I go camping recently?"),
        (f"I traded in my old hatchback for a {r.choice(['hybrid sedan', 'small electric SUV', 'station wagon'])}.", "What car do I drive now?"),
        ("I was promoted to team lead last month, more meetings now.", "Did my position at work change?"),
        ("I've cut out meat completely, only vegetables, beans and tofu now.", "Am I following any particular diet?"),
        ("My grandmother turned ninety, the whole family came over.", "Any big family celebrations lately?"),
        ("I'm taking Spanish lessons twice a week with a tutor online.", "Am I studying any foreign language?"),
        ("The pediatrician said the baby is growing well.", "How is my child's health?"),
        ("I've been going to the gym at six every morning, lifting and rowing.", "What is my exercise routine?"),
        ("I fixed the leaking sink myself with a new washer.", "Did I do any plumbing repairs?"),
    ]  # fmt: skip
    fact, question = r.choice(options)
    return Plant("mismatch", [[("user", fact, True)]], question)


def _preference(r: random.Random) -> Plant:
    options = [
        (f"I really don't like {r.choice(['cilantro', 'olives', 'mushrooms'])}, it ruins any dish for me.",
         "Suggest a dinner recipe I would enjoy."),
        (f"I much prefer {r.choice(['window seats', 'aisle seats'])} on long flights.",
         "Which seat should I pick on my next flight?"),
        (f"I love {r.choice(['dark roast', 'light roast', 'decaf'])} coffee, the stronger the better.",
         "What kind of coffee should I order for me?"),
        (f"Thrillers bore me, I like {r.choice(['historical fiction', 'science fiction', 'memoirs'])} much more.",
         "Can you recommend a book I'd like?"),
        (f"I prefer quiet hotels away from the centre, {r.choice(['no party hostels', 'small guesthouses are best'])}.",
         "What accommodation would suit me on holiday?"),
        (f"Mornings are my best time to work, I'm useless after {r.choice(['four', 'five', 'three'])} pm.",
         "When should I schedule focused work?"),
    ]  # fmt: skip
    fact, question = r.choice(options)
    return Plant("preference", [[("user", fact, True)]], question)


KINDS = {"single": _single, "neighbour": _neighbour, "multi": _multi,
         "temporal": _temporal, "mismatch": _mismatch, "preference": _preference}  # fmt: skip


def _filler(r: random.Random, role: str) -> str:
    pool = FILLER_USER if role == "user" else FILLER_ASSISTANT
    return r.choice(pool).format(topic=r.choice(TOPICS), name=r.choice(NAMES))


def generate(seed: int, users: int = 8, sessions: int = 15, turns: int = 30, per_kind: int = 9) -> dict[str, object]:
    """Per user, sessions (one day of 2026 each) of about ``turns`` turns, and ``per_kind`` questions a kind.

    A user is a namespace: questions are asked of that user's turns only. Two
    plants of one user that ask the same question become one question whose
    answers are both plants' answer turns.
    """
    r = random.Random(seed)
    items: list[dict[str, object]] = []
    questions: list[dict[str, object]] = []
    for u in range(users):
        user = f"u{u}"
        days = sorted(r.sample(range(1, 365), sessions))
        dates = [datetime(2026, 1, 1, 9, tzinfo=UTC) + timedelta(days=d - 1) for d in days]
        by_month: dict[int, list[int]] = {}
        for s, when in enumerate(dates):
            by_month.setdefault(when.month - 1, []).append(s)
        planted: list[list[list[tuple[str, str, bool]]]] = [[] for _ in range(sessions)]
        owners: list[list[dict[str, object] | None]] = [[] for _ in range(sessions)]
        asked: dict[str, dict[str, object]] = {}
        for kind, make in KINDS.items():
            for _ in range(per_kind):
                plant = make(r)
                if plant.month is not None:
                    if plant.month not in by_month or len(by_month) < len(plant.groups):
                        continue
                    others = [m for m in by_month if m != plant.month]
                    chosen = [r.choice(by_month[plant.month])]
                    chosen += [r.choice(by_month[m]) for m in r.sample(others, len(plant.groups) - 1)]
                else:
                    chosen = r.sample(range(sessions), len(plant.groups))
                question = asked.get(plant.question)
                if question is None:
                    question = asked[plant.question] = {
                        "id": f"{user}q{len(asked)}",
                        "user": user,
                        "kind": kind,
                        "text": plant.question,
                        "answers": [],
                    }
                    questions.append(question)
                for s, group in zip(chosen, plant.groups, strict=True):
                    planted[s].append(group)
                    owners[s].append(question)
        for s in range(sessions):
            slots = sorted(r.randrange(turns) for _ in planted[s])
            stream: list[tuple[str, str, dict[str, object] | None]] = []
            at = 0
            for t in range(turns):
                role = "user" if t % 2 == 0 else "assistant"
                stream.append((role, _filler(r, role), None))
                while at < len(slots) and slots[at] == t:
                    stream.extend((rl, text, owners[s][at] if ans else None) for rl, text, ans in planted[s][at])
                    at += 1
            for t, (role, text, owner) in enumerate(stream):
                item_id = f"{user}s{s:02d}t{t:03d}"
                items.append({"id": item_id, "user": user, "session": f"{user}s{s:02d}", "role": role,
                              "text": text, "at": dates[s].timestamp() + 60 * t})  # fmt: skip
                if owner is not None:
                    answers = owner["answers"]
                    assert isinstance(answers, list)
                    answers.append(item_id)
    return {"name": f"conversations-v1-seed{seed}", "seed": seed, "items": items, "questions": questions}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    args = parser.parse_args()
    data = generate(args.seed)
    out: Path = args.out
    out.write_text(json.dumps(data, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    print(f"{out}: {len(data['items'])} turns, {len(data['questions'])} questions")  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
