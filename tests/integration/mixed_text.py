"""Deterministic lines of hard text for tokenizer parity tests and benchmarks: English (mixed
case, punctuation), accented Latin (precomposed and decomposed), Vietnamese stacked diacritics,
CJK, kana, Hangul, Arabic and Hebrew with vowel marks, Devanagari, Thai, emoji with skin tones,
ZWJ sequences and flags, control and format characters, whitespace runs of every kind, very
long words, special-token strings, and random code points from every plane."""
import random

ENGLISH = ("The quick brown fox jumps over the lazy dog . Natural Questions asks real users' "
           "questions about Wikipedia pages ; answers are paragraphs , spans , yes or no . "
           "Don't, won't, it's — \"quoted\" (parenthesised) [bracketed] {braced} e-mail "
           "co-operate U.S.A. 3.14159 1,000,000 $5 50% #hashtag @user a/b c\\d x_y ~tilde").split()
LATIN = ("café naïve résumé Ångström Zürich São Paulo Ñandú façade crème brûlée Øresund "
         "Straße İstanbul ıspanak Łódź Dvořák Ærøskøbing œuvre ÉCOLE Ça").split()
VIETNAMESE = "Tiếng Việt có dấu: người, được, những, chuyện, nghiêng, Hồ Chí Minh".split()
CJK = ["北京是中国的首都", "我爱自然语言处理", "東京タワー", "ひらがなとカタカナ", "한국어 문장입니다",
       "漢字かな交じり文", "𠀀𠀁𪚥", "中文，标点。“引号”！", "ｆｕｌｌｗｉｄｔｈ　ＡＢＣ１２３"]
ARABIC = ["مرحبا بالعالم", "اللُّغَةُ العَرَبِيَّةُ", "سؤال؟ نعم، لا.", "١٢٣ ٤٥٦"]
HEBREW = ["שלום עולם", "בְּרֵאשִׁית בָּרָא", "ספר־תורה"]
OTHER = ["नमस्ते दुनिया", "ภาษาไทย", "Ελληνικά ΟΔΟΣ σοφός", "Русский текст Ёж", "ᚠᚢᚦᚨᚱᚲ",
         "ኢትዮጵያ", "ᐃᓄᒃᑎᑐᑦ", "ꦗꦮ", "ᠮᠣᠩᠭᠣᠯ"]
EMOJI = ["😀", "👍🏽", "👨\u200d👩\u200d👧\u200d👦", "🏳️\u200d🌈", "🇫🇷🇯🇵", "❤️", "☺︎",
         "🧑🏿\u200d🚀", "1️⃣", "🫠"]
COMBINING = ["e\u0301", "a\u0301\u0323", "o\u0323\u0302", "n\u0303", "A\u030a", "i\u0307",
             "x\u0334\u0301\u0327", "\u0301lone", "u\u0308\u0304", "ᄀ\u1161\u11a8"]
CONTROLS = ["\x00", "\x01", "\x07", "\x1b", "\x7f", "\x85", "\u200b", "\u200c", "\u200d",
            "\u00ad", "\ufeff", "\u2060", "\u202e", "\ue000", "\U000f0000", "\ufffd", "\u0378",
            "\U000e0001", "\u061c", "\u180e"]
SPACES = [" ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u2028", "\u2029", "\u2003",
          "\u202f", "\x0b", "\x0c", " \t \n  "]
SPECIALS = ["[SEP]", "[CLS]", "[MASK]", "[PAD]", "[UNK]", "<s>", "</s>", "<pad>", "<unk>",
            "<mask>", "[unused0]"]


def random_code_point(rng):
    while True:
        plane = rng.choice([0, 0, 0, 0, 1, 1, 2, 3, 14, 15])
        c = plane * 0x10000 + rng.randrange(0x10000)
        if not 0xD800 <= c <= 0xDFFF:
            return chr(c)


def long_word(rng):
    n = rng.choice([99, 100, 101, 150, 400])
    letters = "abcdefghijklmnopqrstuvwxyzé"
    return "".join(rng.choice(letters) for _ in range(n))


def piece(rng):
    kind = rng.random()
    if kind < 0.35:
        return rng.choice(ENGLISH)
    if kind < 0.45:
        return rng.choice(LATIN + VIETNAMESE)
    if kind < 0.52:
        return rng.choice(CJK)
    if kind < 0.57:
        return rng.choice(ARABIC + HEBREW)
    if kind < 0.61:
        return rng.choice(OTHER)
    if kind < 0.66:
        return rng.choice(EMOJI)
    if kind < 0.71:
        return rng.choice(COMBINING)
    if kind < 0.75:
        return rng.choice(CONTROLS)
    if kind < 0.77:
        return rng.choice(SPECIALS)
    if kind < 0.78:
        return long_word(rng)
    if kind < 0.86:
        return "".join(random_code_point(rng) for _ in range(rng.randint(1, 3)))
    return rng.choice(SPACES)


def mixed_lines(count, seed=1234):
    rng = random.Random(seed)
    lines = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 24)):
            parts.append(piece(rng))
            parts.append(rng.choice(SPACES) if rng.random() < 0.8 else "")
        lines.append("".join(parts))
    return lines
