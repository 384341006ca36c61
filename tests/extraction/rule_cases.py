"""Messages a user might write, each with the memories a careful reader would take from it:
the truth the rule-based extractor (extraction/rules.py) is measured against in
test_rules_table.py. Written as what should come out, not as what the extractor does: the
few it gets wrong are listed in KNOWN_MISSES, with why.

A memory is (key, value, category, importance); every rule memory has confidence 0.7 and
scope user."""

NAME = ("personal", 0.8)
PREFERRED_NAME = ("personal", 0.7)
HOME = ("personal", 0.6)
ORIGIN = ("personal", 0.5)
WORK = ("work", 0.6)
ALLERGY = ("personal", 0.9)
PREFERENCE = ("preference", 0.5)
NOTE = ("note", 0.6)


def m(key: str, value: str, kind: tuple[str, float]) -> tuple[str, str, str, float]:
    return (key, value, *kind)


CASES: list[tuple[str, list[tuple[str, str, str, float]]]] = [
    # --- names ------------------------------------------------------------------------------------
    (
        "My name is Dana and I live in Lisbon.",
        [m("name", "Name is Dana", NAME), m("home", "Lives in Lisbon", HOME)],
    ),
    ("Hi there, my name is Ana Silva.", [m("name", "Name is Ana Silva", NAME)]),
    ("my name's Tom, nice to meet you", [m("name", "Name is Tom", NAME)]),
    (
        "Hello! My name is Dr. Ana Costa and I'm new here.",
        [m("name", "Name is Dr. Ana Costa", NAME)],
    ),
    ("Everyone at work knows I'm called Priya.", [m("name", "Name is Priya", NAME)]),
    ("Just call me Bea.", [m("preferred name", "Wants to be called Bea", PREFERRED_NAME)]),
    (
        'Call me "Bea", everyone does.',
        [m("preferred name", "Wants to be called Bea", PREFERRED_NAME)],
    ),
    ("I go by Sam these days.", [m("preferred name", "Wants to be called Sam", PREFERRED_NAME)]),
    (
        "I'd prefer to be called Kit.",
        [m("preferred name", "Wants to be called Kit", PREFERRED_NAME)],
    ),
    ("Please don't call me Robert.", []),
    ("Can you call me back tomorrow?", []),
    ("What's my name again?", []),
    ("I'm called back to the office most Fridays.", []),
    # --- where they live and come from ------------------------------------------------------------
    ("I live in Porto.", [m("home", "Lives in Porto", HOME)]),
    ("I'm based in Berlin these days.", [m("home", "Lives in Berlin", HOME)]),
    ("I moved to Rio de Janeiro last year.", [m("home", "Lives in Rio de Janeiro", HOME)]),
    ("I live in Lisbon since 2019 with my husband.", [m("home", "Lives in Lisbon", HOME)]),
    (
        "I live in a small village near Porto with my wife.",
        [m("home", "Lives in a small village near Porto", HOME)],
    ),
    ("I live in St. Louis, and it's cold in winter.", [m("home", "Lives in St. Louis", HOME)]),
    ("I don't live in Paris anymore, I live in Porto now.", [m("home", "Lives in Porto", HOME)]),
    ("I don't live in Paris anymore.", []),
    ("I no longer live in Paris.", []),
    ("I used to live in Madrid.", []),
    ("If I lived in Paris I would walk everywhere.", []),
    ("Where do I live?", []),
    ("do I live in Lisbon or Porto", []),
    ("My friend thinks I live in Paris.", []),
    ("I'd love to live in Tokyo someday.", []),
    ("I'm originally from Brazil.", [m("origin", "Comes from Brazil", ORIGIN)]),
    ("I come from Kerala, in the south of India.", [m("origin", "Comes from Kerala", ORIGIN)]),
    ("I'm not from Spain, people just assume that.", []),
    # --- work -------------------------------------------------------------------------------------
    (
        "I work as a nurse at St. Mary hospital.",
        [m("job", "Works as a nurse at St. Mary hospital", WORK)],
    ),
    ("I'm working as a freelance designer.", [m("job", "Works as a freelance designer", WORK)]),
    (
        "I work as a software engineer and I love it.",
        [m("job", "Works as a software engineer", WORK)],
    ),
    (
        "I work at Acme as a data analyst.",
        [m("employer", "Works at Acme", WORK), m("job", "Works as a data analyst", WORK)],
    ),
    ("I work at Google.", [m("employer", "Works at Google", WORK)]),
    (
        "I work for a small bakery in Porto.",
        [m("employer", "Works for a small bakery in Porto", WORK)],
    ),
    (
        "I'm employed by the city council, e.g. on parking permits.",
        [m("employer", "Works for the city council", WORK)],
    ),
    ("I work as hard as I can.", []),
    ("I want to work as a pilot one day.", []),
    ("I used to work as a waiter.", []),
    ("I work at night mostly.", []),
    ("I work at home on Fridays.", []),
    ("I stopped working at Acme in May.", []),
    # --- allergies --------------------------------------------------------------------------------
    ("I'm allergic to peanuts!", [m("allergy to peanuts", "Allergic to peanuts", ALLERGY)]),
    (
        "Remember that I am allergic to peanuts",
        [m("allergy to peanuts", "Allergic to peanuts", ALLERGY)],
    ),
    (
        "I'm severely allergic to penicillin.",
        [m("allergy to penicillin", "Allergic to penicillin", ALLERGY)],
    ),
    ("I have a shellfish allergy.", [m("allergy to shellfish", "Allergic to shellfish", ALLERGY)]),
    (
        "I'm allergic to cats and dogs.",
        [
            m("allergy to cats", "Allergic to cats", ALLERGY),
            m("allergy to dogs", "Allergic to dogs", ALLERGY),
        ],
    ),
    (
        "I'm allergic to peanuts, shellfish and latex.",
        [
            m("allergy to peanuts", "Allergic to peanuts", ALLERGY),
            m("allergy to shellfish", "Allergic to shellfish", ALLERGY),
            m("allergy to latex", "Allergic to latex", ALLERGY),
        ],
    ),
    ("I'm not allergic to anything.", []),
    ("Am I allergic to penicillin?", []),
    ("I'm not sure if I'm allergic to latex.", []),
    # --- preferences ------------------------------------------------------------------------------
    (
        "I prefer green tea over coffee",
        [m("preferred drink", "Prefers green tea over coffee", PREFERENCE)],
    ),
    ("I prefer dark mode.", [m("ui theme", "Prefers dark mode", PREFERENCE)]),
    ("I'd prefer short answers, please.", [m("answer style", "Prefers short answers", PREFERENCE)]),
    (
        "I really prefer window seats when I fly.",
        [m("preferred seat", "Prefers window seats", PREFERENCE)],
    ),
    (
        "I would rather have coffee than tea.",
        [m("preferred drink", "Prefers coffee over tea", PREFERENCE)],
    ),
    (
        "I like tea better than coffee.",
        [m("preferred drink", "Prefers tea over coffee", PREFERENCE)],
    ),
    (
        "I'd rather drink water instead of soda.",
        [m("preferred drink", "Prefers water over soda", PREFERENCE)],
    ),
    (
        "I prefer Python to JavaScript for scripts.",
        [m("programming language", "Prefers Python to JavaScript for scripts", PREFERENCE)],
    ),
    (
        "I prefer emails over phone calls.",
        [m("contact method", "Prefers emails over phone calls", PREFERENCE)],
    ),
    ("I generally prefer metric units.", [m("units", "Prefers metric units", PREFERENCE)]),
    (
        "I prefer to work in the mornings.",
        [m("preferred time of day", "Prefers to work in the mornings", PREFERENCE)],
    ),
    ("I prefer cats.", [m("preference: cats", "Prefers cats", PREFERENCE)]),
    (
        "My favourite colour is blue.",
        [m("favourite colour", "Favourite colour is blue", PREFERENCE)],
    ),
    (
        "my favorite band is Radiohead",
        [m("favourite band", "Favourite band is Radiohead", PREFERENCE)],
    ),
    ("Do I prefer tea or coffee?", []),
    ("do I prefer tea", []),
    ("I'd prefer not to say.", []),
    ('My boss always says "I prefer tea".', []),
    # --- asked to remember ------------------------------------------------------------------------
    (
        "Please remember that my sister's birthday is on May 3.",
        [m("sister's birthday", "My sister's birthday is on May 3", NOTE)],
    ),
    ("Remember: parking is on level 3.", [m("parking", "Parking is on level 3", NOTE)]),
    (
        "Remember that my flight is at 6am on Friday.",
        [m("flight", "My flight is at 6am on Friday", NOTE)],
    ),
    (
        "Don't forget that my passport expires in June.",
        [m("note: passport expires june", "My passport expires in June", NOTE)],
    ),
    ("Keep in mind that I'm vegetarian.", [m("note: vegetarian", "I'm vegetarian", NOTE)]),
    (
        "Could you remember that I take my coffee black?",
        [m("note: take coffee black", "I take my coffee black", NOTE)],
    ),
    ("Don't forget that I live in Braga now.", [m("home", "Lives in Braga", HOME)]),
    ("I remember that we went to Rome in 2010.", []),
    ("Do you remember that I live in Lisbon?", []),
    ("Remember to buy milk.", []),
    ("Forget that I said I live in Paris.", []),
    # --- other people's facts: keyed about them, never the user's ---------------------------------
    ("My sister lives in Rome.", [m("sister's home", "Sister lives in Rome", HOME)]),
    (
        "My son is allergic to peanuts.",
        [m("son's allergy to peanuts", "Son is allergic to peanuts", ALLERGY)],
    ),
    (
        "My daughter has a severe egg allergy.",
        [m("daughter's allergy to egg", "Daughter is allergic to egg", ALLERGY)],
    ),
    ("My wife's name is Ana.", [m("wife's name", "Wife's name is Ana", NAME)]),
    (
        "My sister lives in Rome and works at a bank.",
        [
            m("sister's home", "Sister lives in Rome", HOME),
            m("sister's employer", "Sister works at a bank", WORK),
        ],
    ),
    ("My husband works as a pilot.", [m("husband's job", "Husband works as a pilot", WORK)]),
    (
        "My brother Luis lives in Madrid.",
        [m("brother luis's home", "Brother Luis lives in Madrid", HOME)],
    ),
    (
        "My wife prefers black coffee.",
        [m("wife's preferred drink", "Wife prefers black coffee", PREFERENCE)],
    ),
    ("My mom thinks I work too much.", []),
    ("We live in Lisbon.", []),
    ("She lives in Paris with her kids.", []),
    ('He told me "I live in Rome now".', []),
    # --- several facts, and ordinary talk ---------------------------------------------------------
    (
        "Hi! I'm Joana, I live in Braga and I work as a teacher.",
        [
            m("name", "Name is Joana", NAME),
            m("home", "Lives in Braga", HOME),
            m("job", "Works as a teacher", WORK),
        ],
    ),
    (
        "I moved to Porto in 2019 and I work at a bakery there.",
        [m("home", "Lives in Porto", HOME), m("employer", "Works at a bakery", WORK)],
    ),
    (
        "So yeah, I live in Manchester now and work for the NHS.",
        [m("home", "Lives in Manchester", HOME), m("employer", "Works for the NHS", WORK)],
    ),
    (
        "I’m allergic to bee stings.",
        [m("allergy to bee stings", "Allergic to bee stings", ALLERGY)],
    ),
    ("My name is Marco — I’m Italian.", [m("name", "Name is Marco", NAME)]),
    ("Our dog is called Biscuit.", [m("dog's name", "Dog's name is Biscuit", NAME)]),
    ("Can you remember that I'm left-handed?", [m("note: left-handed", "I'm left-handed", NOTE)]),
    (
        "I prefer light mode in the evenings.",
        [m("ui theme", "Prefers light mode in the evenings", PREFERENCE)],
    ),
    ("I wish I lived in Barcelona.", []),
    (
        "My partner is allergic to shellfish, so no prawns please.",
        [m("partner's allergy to shellfish", "Partner is allergic to shellfish", ALLERGY)],
    ),
    (
        "i work as a barista at Blue Bottle, it's fun",
        [m("job", "Works as a barista at Blue Bottle", WORK)],
    ),
    (
        "My dad lives in Leeds but my mum lives in York.",
        [m("dad's home", "Dad lives in Leeds", HOME), m("mum's home", "Mum lives in York", HOME)],
    ),
    ("Where should I live, Lisbon or Porto?", []),
    ("I'll be moving to Oslo next year.", []),
    ("I've just moved to Amsterdam.", [m("home", "Lives in Amsterdam", HOME)]),
    ("I live in fear of missing deadlines.", []),
    ("Can you summarise this article for me?", []),
    ("I forgot my keys at the office again.", []),
]

# Cases the extractor gets wrong, and why; their tests are expected to fail (strictly: one
# that starts passing must be moved out of here).
KNOWN_MISSES = {
    "Hi! I'm Joana, I live in Braga and I work as a teacher.": (
        '"I\'m X" is left alone: "I\'m Portuguese", "I\'m tired" say no name'
    ),
    "I live in fear of missing deadlines.": "an idiom: the rules cannot tell it from a place",
}
