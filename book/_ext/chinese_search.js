/*
 * The Chinese edition's search: a reader's query cut into the words of the search index.
 *
 * book/_ext/chinese_search.py gives this file to Sphinx as the Chinese search language's query
 * splitter: Sphinx writes it into _static/language_data.js, which the search page loads after
 * searchtools.js and before the index. jieba cut the index at build time, with the book's
 * glossary terms in its dictionary; the query is cut here against the words the index holds, so
 * both are cut alike and no dictionary is downloaded. What it changes of searchtools.js:
 *
 * - splitQuery: a run of Chinese characters becomes its finest cut into index words that leaves
 *   out the fewest characters (梯度消失的条件: 梯度, 消失, 条件; 的, a single character, is not
 *   indexed); characters the index lacks, two or more in a row, stay one word and find nothing.
 *   A query of one character is looked up whole: the index holds the one-character glossary
 *   words (门), and no other.
 * - Search.setIndex: a glossary entry, "梯度消失（vanishing gradient）", is also found by either
 *   of its names, as an English entry is by its one name.
 * - Search.performTermsSearch: a page must hold every word (Sphinx's own search lets through a
 *   page that lacks a word of one or two letters: short English words, but most Chinese words).
 * - Search.query: the results whose text holds the whole query come first, then those holding
 *   more of its runs of Chinese, each group in Sphinx's order. The texts are the pages Sphinx
 *   fetches for its snippets; from file://, where a browser fetches nothing, Sphinx's order stays.
 * - Search.makeSearchSummary: the snippet comes from the page's article, not the whole page, and
 *   is centred on the phrase where the text holds it.
 */

const ChineseSearch = {
  han: /\p{Script=Han}/u,
  // Sphinx reads a result's text under `[role="main"] <anchor>`; this theme's main element also
  // holds the page's buttons, its contents and the links to its neighbours: a page's own text,
  // the one its index words come from, is its article.
  within: (anchor) => anchor || "article",

  // The index's Chinese words, and the length of the longest, for the index loaded.
  _vocabulary: null,
  vocabulary: () => {
    const index = Search._index;
    if (ChineseSearch._vocabulary?.index !== index) {
      const words = new Set(
        [...Object.keys(index.terms), ...Object.keys(index.titleterms)]
          .filter((word) => ChineseSearch.han.test(word))
      );
      const longest = Math.max(0, ...[...words].map((word) => [...word].length));
      ChineseSearch._vocabulary = { index, words, longest };
    }
    return ChineseSearch._vocabulary;
  },

  // A run of Chinese characters as index words: fewest characters left out, then most words.
  cut: (run) => {
    if (!Search._index) return [run];
    const { words, longest } = ChineseSearch.vocabulary();
    const chars = [...run];
    // A run of one character is a word only if the index holds it (a glossary word such as 门).
    if (chars.length === 1) return words.has(run) ? [run] : [];
    // best[end]: [characters left out, minus the words, pieces] of the cut of chars[0, end)
    const best = [[0, 0, []]];
    for (let end = 1; end <= chars.length; end++) {
      const [out, count, pieces] = best[end - 1];
      let choice = [out + 1, count, [...pieces, { text: chars[end - 1], known: false }]];
      for (let start = Math.max(0, end - longest); start < end - 1; start++) {
        const word = chars.slice(start, end).join("");
        const [wordOut, wordCount, wordPieces] = best[start];
        const better = wordOut < choice[0] || (wordOut === choice[0] && wordCount - 1 < choice[1]);
        if (words.has(word) && better)
          choice = [wordOut, wordCount - 1, [...wordPieces, { text: word, known: true }]];
      }
      best.push(choice);
    }
    // Characters left out in a row: one unindexed word if two or more, else dropped.
    const cut = [];
    let unknown = "";
    for (const { text, known } of [...best[chars.length][2], { text: "", known: true }]) {
      if (!known) unknown += text;
      else {
        if ([...unknown].length > 1) cut.push(unknown);
        unknown = "";
        if (text) cut.push(text);
      }
    }
    return cut;
  },

  // The phrases of the query searched for (Search.query sets them, the snippets read them).
  current: [],
  // What a page's text is searched for: the whole query, then each run of Chinese in it that is
  // not the whole query (a Latin word or a number is one word, which the index finds or not).
  phrases: (query) => {
    const whole = query.trim().replace(/\s+/g, " ");
    const runs = (whole.match(/\p{Script=Han}+/gu) || []).filter((run) => run !== whole);
    return [whole, ...runs].map((phrase) => {
      const chars = [...phrase.replace(/\s+/g, "")].map(_escapeRegExp);
      return new RegExp(chars.join("\\s*"), "i"); // spaces between Latin and Chinese vary
    });
  },

  // How much of the query a text holds: the whole query outranks all its parts together.
  rank: (text, phrases) => {
    const [whole, ...parts] = phrases.map((phrase) => phrase.test(text));
    return (whole ? parts.length + 1 : 0) + parts.filter((held) => held).length;
  },

  // A page's HTML, fetched once for all its results (a page and its sections).
  pages: new Map(),
  pageText: (docName, anchor) => {
    if (!ChineseSearch.pages.has(docName)) {
      const root = document.documentElement.dataset.content_root;
      const url = root + docName + DOCUMENTATION_OPTIONS.FILE_SUFFIX;
      ChineseSearch.pages.set(docName, fetch(url).then((response) => response.text()));
    }
    return ChineseSearch.pages.get(docName)
      .then((html) => Search.htmlToText(html, ChineseSearch.within(anchor)))
      .catch(() => null);
  },

  // Sphinx's results (displayed from the last) with the best-ranked texts last, else in order.
  phrasesFirst: async (results, phrases) => {
    const texts = await Promise.all(results.map(([docName, , anchor]) =>
      ChineseSearch.pageText(docName, anchor)));
    const ranks = texts.map((text) => (text === null ? 0 : ChineseSearch.rank(text, phrases)));
    return results.map((result, i) => [ranks[i], i, result])
      .sort((a, b) => a[0] - b[0] || a[1] - b[1])
      .map(([, , result]) => result);
  },
};

// A glossary term is the index entry "梯度消失（vanishing gradient）", which Sphinx finds for a
// query at least half as long: a reader types one of its two names, each made an entry too.
const sphinxSetIndex = Search.setIndex;
Search.setIndex = (index) => {
  for (const [entry, found] of Object.entries(index.indexentries)) {
    for (const name of entry.match(/^(.+)（(.+)）$/)?.slice(1) || [])
      index.indexentries[name.trim().toLowerCase()] ??= found;
  }
  sphinxSetIndex(index);
};

var splitQuery = (query) => query
  .split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu) // Sphinx's own split
  .flatMap((term) => term.match(/\p{Script=Han}+|\P{Script=Han}+/gu) || [])
  .flatMap((term) => (ChineseSearch.han.test(term) ? ChineseSearch.cut(term) : [term]))
  .filter((term) => term);

const sphinxTermsSearch = Search.performTermsSearch;
Search.performTermsSearch = (searchTerms, excludedTerms) => {
  if (searchTerms.size < 2) return sphinxTermsSearch(searchTerms, excludedTerms);
  const found = [...searchTerms].map((word) => sphinxTermsSearch(new Set([word]), excludedTerms));
  // a page found for every word, with its best score, as Sphinx scores a page
  return found[0].flatMap((result) => {
    const scores = found.map((results) => Math.max(
      ...results.filter((other) => other[0] === result[0]).map((other) => other[4])));
    if (scores.includes(-Infinity)) return [];
    return [[...result.slice(0, 4), Math.max(...scores), result[5]]];
  });
};

Search.query = (query) => {
  const [searchQuery, searchTerms, excludedTerms, highlightTerms, objectTerms] =
    Search._parseQuery(query);
  const results = Search._performSearch(
    searchQuery, searchTerms, excludedTerms, highlightTerms, objectTerms);
  ChineseSearch.current = ChineseSearch.phrases(query);
  ChineseSearch.phrasesFirst(results, ChineseSearch.current).then((ordered) =>
    _displayNextItem(ordered, ordered.length, searchTerms, highlightTerms));
};

// Sphinx centres the snippet on the last keyword it finds: the phrase, where the text holds it.
const sphinxSummary = Search.makeSearchSummary;
Search.makeSearchSummary = (htmlText, keywords, anchor) => {
  const text = Search.htmlToText(htmlText, ChineseSearch.within(anchor));
  const held = ChineseSearch.current.map((phrase) => text.match(phrase)).filter((m) => m);
  const shortestFirst = held.map((match) => match[0]).sort((a, b) => a.length - b.length);
  return sphinxSummary(htmlText, [...keywords, ...shortestFirst], ChineseSearch.within(anchor));
};
